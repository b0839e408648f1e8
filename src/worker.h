/*-------------------------------------------------------------------------
 *
 * src/worker.h
 *		The expiry worker's launcher, and the status that the launcher and
 *		the worker keep in shared memory (README "Operations").
 *
 * Two background workers do the scheduled expiry when pg_inventory is in
 * shared_preload_libraries and pg_inventory.worker_database names a
 * database:
 *
 *	- the launcher ("pg_inventory launcher"), started by the postmaster,
 *	  connected to no database: it reads pg_database and starts
 *	- the expiry worker ("pg_inventory expiry worker"), a dynamic worker in
 *	  that database that is never restarted by the postmaster: it runs the
 *	  expiry and retention passes (expire_due, purge_published and, when
 *	  pg_inventory.history_retention is set, purge_history) and automatic
 *	  slotting of contended SKUs (pg_inventory.auto_slots) while the
 *	  extension is installed and exits as soon as it is not, so that it
 *	  never keeps a database that is being dropped.
 *
 * Both write InventoryWorkerStatus below; InventoryWorkerGetStatus gives a
 * consistent copy of it to any backend.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_INVENTORY_WORKER_H
#define PG_INVENTORY_WORKER_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/timestamp.h"

/* Bytes kept of the message of the last error of a pass, with its NUL */
#define INVENTORY_WORKER_ERROR_MAX	256

/* What the launcher is doing */
typedef enum InventoryLauncherState
{
	INVENTORY_LAUNCHER_STOPPED = 0, /* not started, or exited */
	INVENTORY_LAUNCHER_CHECKING,	/* reading pg_database, starting the worker */
	INVENTORY_LAUNCHER_NO_DATABASE, /* the database does not exist, or takes
									 * no connections: checks every few
									 * seconds */
	INVENTORY_LAUNCHER_WORKER_RUNNING,	/* the expiry worker runs */
	INVENTORY_LAUNCHER_NO_EXTENSION,	/* the extension is not installed there:
										 * checks again with a growing delay */
	INVENTORY_LAUNCHER_RETRY	/* the worker ended otherwise (terminated,
								 * no free worker slot): starts it again soon */
} InventoryLauncherState;

/* What the expiry worker is doing */
typedef enum InventoryWorkerState
{
	INVENTORY_WORKER_STOPPED = 0,	/* not running */
	INVENTORY_WORKER_STARTING,	/* connecting, looking for the extension */
	INVENTORY_WORKER_IDLE,		/* waiting for the next pass */
	INVENTORY_WORKER_EXPIRING,	/* in inventory.expire_due */
	INVENTORY_WORKER_PURGING,	/* in inventory.purge_published */
	INVENTORY_WORKER_PURGING_HISTORY,	/* in inventory.purge_history */
	INVENTORY_WORKER_ADVANCING, /* in inventory.advance_outbox_low_water */
	INVENTORY_WORKER_SLOTTING	/* splitting or merging a SKU's slots */
} InventoryWorkerState;

/* Why the last expiry worker stopped */
typedef enum InventoryWorkerExit
{
	INVENTORY_WORKER_EXIT_NONE = 0, /* it runs, or stopped before it could
									 * say (e.g. the database vanished while
									 * it connected) */
	INVENTORY_WORKER_EXIT_NO_EXTENSION, /* the extension is not installed */
	INVENTORY_WORKER_EXIT_EXTENSION_DROPPED,	/* it was dropped while the
												 * worker ran */
	INVENTORY_WORKER_EXIT_TERMINATED	/* SIGTERM (DROP DATABASE ... WITH
										 * (FORCE), pg_terminate_backend,
										 * shutdown) or another FATAL error */
} InventoryWorkerExit;

/*
 * The status of the launcher and the expiry worker.  Counters and totals
 * run from the start of the server (shared memory is set up then) and are
 * never reset.  Times are 0 until the event first happens.
 */
typedef struct InventoryWorkerStatus
{
	bool		enabled;		/* false when pg_inventory was not preloaded
								 * with a pg_inventory.worker_database: every
								 * other field is then zero */

	/* the launcher */
	InventoryLauncherState launcher_state;
	int			launcher_pid;	/* 0 when it is not running */
	int32		launcher_checks;	/* checks in a row with the current
									 * outcome; 0 while a worker runs */
	TimestampTz launcher_next_check;	/* when it checks next, or 0 */
	Oid			database_oid;	/* pg_inventory.worker_database when last
								 * found, else InvalidOid */

	/* the expiry worker */
	InventoryWorkerState worker_state;
	int			worker_pid;		/* 0 when it is not running */
	TimestampTz worker_started_at;
	InventoryWorkerExit worker_exit;	/* why the last one stopped */

	/*
	 * the passes: expire_due in batches, then purge_published, then (with
	 * pg_inventory.history_retention, 0.5 on) purge_history
	 */
	TimestampTz last_pass_at;	/* end of the last pass */
	int64		last_pass_expired;	/* reservations expired in it */
	int64		last_pass_purged;	/* outbox events deleted in it */
	int64		last_pass_history_purged;	/* finished reservations removed
											 * in it */
	int64		total_passes;
	int64		total_expired;
	int64		total_purged;
	int64		total_history_purged;

	/* errors caught in a pass (the worker goes on) */
	int64		total_errors;
	TimestampTz last_error_at;
	char		last_error_sqlstate[6]; /* five characters and a NUL */
	char		last_error_message[INVENTORY_WORKER_ERROR_MAX];

	/* logged once until the situation changes */
	bool		database_missing_reported;
	bool		extension_missing_reported;
} InventoryWorkerStatus;

extern bool InventoryWorkerGetStatus(InventoryWorkerStatus *status);

PGDLLEXPORT void InventoryLauncherMain(Datum main_arg);

#endif							/* PG_INVENTORY_WORKER_H */
