/*-------------------------------------------------------------------------
 *
 * src/worker.c
 *		Scheduled expiry: a launcher, the expiry worker it starts in
 *		pg_inventory.worker_database, and their status in shared memory
 *		(README "Operations").
 *
 * Only when pg_inventory is in shared_preload_libraries and
 * pg_inventory.worker_database names a database; otherwise nothing here
 * runs and the extension works as usual.
 *
 * The launcher ("pg_inventory launcher") is a static background worker
 * connected to no database.  It reads the shared catalog pg_database:
 *	- the database does not exist (or takes no connections): it logs that
 *	  once and looks again every INVENTORY_DATABASE_POLL_MS, quietly;
 *	- it exists: it starts the expiry worker there, a dynamic background
 *	  worker that the postmaster never restarts, and waits for it to stop;
 *	- the worker stopped because the extension is not installed: it starts
 *	  it again after a delay that grows from INVENTORY_EXTENSION_FIRST_MS to
 *	  INVENTORY_EXTENSION_MAX_MS, each such check holding the database for
 *	  a few milliseconds;
 *	- the worker stopped otherwise (terminated, e.g. by DROP DATABASE ...
 *	  WITH (FORCE)): it looks at pg_database again after
 *	  INVENTORY_RETRY_MS.
 * A transaction that creates, drops or alters a database, or creates an
 * extension in the worker's database, wakes the launcher at commit, so
 * that CREATE EXTENSION pg_inventory starts expiry at once.
 *
 * The expiry worker ("pg_inventory expiry worker") connects as the
 * bootstrap superuser and, every pg_inventory.worker_interval, runs one
 * pass: inventory.expire_due(pg_inventory.worker_batch_size), each batch
 * its own transaction, repeated while batches come back full, then
 * inventory.purge_published(pg_inventory.outbox_retention, 10000) when the
 * installed version has it (0.2 on), in a transaction of its own, then,
 * when pg_inventory.history_retention is not 0 and the installed version
 * has it (0.5 on), inventory.purge_history(history_retention, 1000) in a
 * transaction of its own (one batch a pass: its SKIP LOCKED never waits
 * on the application's reservations), then, when the installed version
 * has it (0.7 on), inventory.advance_outbox_low_water(false) (true every
 * 60th pass, the first included) in a transaction of its own.  Each
 * transaction first takes a share lock on the extension and checks that it
 * still exists; when it does not, the worker logs that once and exits with
 * code 0.  A transaction that drops the extension in its database wakes it
 * at commit, so it leaves at once whatever its interval, and a plain DROP
 * DATABASE after DROP EXTENSION does not find it there.
 *
 * An error in a pass (a bad row, a cancel, a deadlock) is caught: the
 * transaction is rolled back, the error is logged as a WARNING with its
 * SQLSTATE, counted in the status, and the worker carries on at the next
 * interval.  The worker logs any WARNING (its own, or one raised inside a
 * pass, such as expire_due naming a broken row) at most once a minute, with
 * the number left out since.  Only a FATAL error or
 * SIGTERM ends it; the launcher then decides what comes next, so the
 * postmaster never restarts it in a loop.
 *
 * Between and after passes, every pg_inventory.auto_slots_interval, the
 * worker does automatic slotting (issue #12): it samples lock waits on
 * stock slots and splits a contended one-slot SKU with set_stock_slots,
 * merging it back when the rush is over (see "automatic slotting" below;
 * pg_inventory.auto_slots = 0 switches it off).  Each sample and each
 * change is a transaction of its own, its errors caught as a pass's.
 *
 * Lock order: the worker takes the extension's object lock (share) before
 * anything expire_due or set_stock_slots locks; DROP EXTENSION takes it
 * (exclusive) first too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "catalog/namespace.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "pg_inventory.h"
#include "worker.h"

#define INVENTORY_LAUNCHER_NAME		"pg_inventory launcher"
#define INVENTORY_WORKER_NAME		"pg_inventory expiry worker"

/* the postmaster restarts a launcher that died after this many seconds */
#define INVENTORY_LAUNCHER_RESTART_S	10
/* a missing database is looked for this often */
#define INVENTORY_DATABASE_POLL_MS		5000
/* a database being dropped or renamed is looked at again this soon */
#define INVENTORY_DATABASE_BUSY_MS		1000
/* a worker that stopped for another reason is started again after this */
#define INVENTORY_RETRY_MS				5000
/* a missing extension is looked for after this, doubling up to the max */
#define INVENTORY_EXTENSION_FIRST_MS	5000
#define INVENTORY_EXTENSION_MAX_MS		60000
/* the same error of a pass is logged at most once in this long */
#define INVENTORY_ERROR_REPEAT_MS		60000
/* events purge_published deletes in one pass at most */
#define INVENTORY_PURGE_MAX_ROWS		10000
/* finished reservations purge_history removes in one pass at most */
#define INVENTORY_HISTORY_MAX_ROWS		1000
/* the low-water mark is recomputed from the outbox's start this often */
#define INVENTORY_LOW_WATER_FULL_EVERY	60

/* What the launcher and the worker share; guarded by mutex */
typedef struct InventoryWorkerShared
{
	slock_t		mutex;
	InventoryWorkerStatus status;	/* what InventoryWorkerGetStatus copies */
	Latch	   *launcher_latch; /* set to wake the launcher, or NULL */
	Latch	   *worker_latch;	/* set to wake the expiry worker, or NULL */
	bool		launcher_wakeup;	/* a commit asked for a check now */
} InventoryWorkerShared;

/* What the launcher found in pg_database */
typedef enum LauncherDatabase
{
	LAUNCHER_DATABASE_MISSING,
	LAUNCHER_DATABASE_NO_CONNECTIONS,
	LAUNCHER_DATABASE_BUSY,		/* being dropped, renamed or moved */
	LAUNCHER_DATABASE_READY
} LauncherDatabase;

/* What the launcher's loop carries from one round to the next */
typedef struct LauncherLoop
{
	BackgroundWorkerHandle *handle; /* our expiry worker, or NULL */
	TimestampTz next_check;		/* when to look up the database again */
	int			backoff_ms;		/* delay after the last "no extension" */
	bool		no_slot_reported;	/* "no free slot" logged, no start since */
} LauncherLoop;

/* The steps of a pass */
typedef enum WorkerStepKind
{
	WORKER_STEP_EXPIRE,
	WORKER_STEP_PURGE,
	WORKER_STEP_HISTORY,
	WORKER_STEP_LOW_WATER,		/* advance_outbox_low_water(false) */
	WORKER_STEP_LOW_WATER_FULL	/* advance_outbox_low_water(true) */
} WorkerStepKind;

/* How a step of a pass ended */
typedef enum WorkerStepResult
{
	WORKER_STEP_DONE,
	WORKER_STEP_SKIPPED,		/* purge_published (0.1) or purge_history
								 * (before 0.5) does not exist */
	WORKER_STEP_FAILED,			/* an error, logged and counted */
	WORKER_STEP_NO_EXTENSION	/* the extension is not installed */
} WorkerStepResult;

static InventoryWorkerShared *inventory_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static object_access_hook_type prev_object_access_hook = NULL;

/* in any backend: whom to wake when the current transaction commits */
static bool wake_launcher_at_commit = false;
static bool wake_worker_at_commit = false;
static bool xact_callback_registered = false;

/* in the launcher: the outcome of its last check, and how many in a row */
static InventoryLauncherState launcher_outcome = INVENTORY_LAUNCHER_STOPPED;
static int32 launcher_outcome_checks = 0;

/* in the expiry worker */
static SPIPlanPtr expire_plan = NULL;
static SPIPlanPtr purge_plan = NULL;
static SPIPlanPtr history_plan = NULL;
static SPIPlanPtr low_water_plan = NULL;
static emit_log_hook_type prev_emit_log_hook = NULL;

/*
 * In the expiry worker: the WARNINGs it logged lately (its own, and those
 * that functions raise inside its passes, e.g. expire_due naming a broken
 * row), so that each is logged at most once in INVENTORY_ERROR_REPEAT_MS
 * however often a pass meets it.
 */
typedef struct WorkerWarning
{
	int			sqlerrcode;
	uint32		hash;			/* of the message */
	TimestampTz logged_at;		/* 0: an empty entry */
	int64		not_logged;		/* repeats since then */
} WorkerWarning;

#define WORKER_WARNINGS_KEPT 16
static WorkerWarning worker_warnings[WORKER_WARNINGS_KEPT];

/* ---------------------------------------------------------------- shmem */

/* shmem_request_hook: room for the shared status (postmaster, preloading) */
static void
InventoryShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(InventoryWorkerShared)));
}

/*
 * shmem_startup_hook: finds or makes the shared status; zeroes it at
 * server start and after a crash, when shared memory is made anew.
 */
static void
InventoryShmemStartup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	inventory_shared = ShmemInitStruct("pg_inventory worker status",
									   sizeof(InventoryWorkerShared),
									   &found);
	if (!found)
	{
		memset(inventory_shared, 0, sizeof(InventoryWorkerShared));
		SpinLockInit(&inventory_shared->mutex);
		inventory_shared->status.enabled = true;
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * InventoryWorkerGetStatus
 *		Copies the status of the launcher and the expiry worker into
 *		*status, taken at one instant under the status spinlock, so that
 *		related fields agree (e.g. total_expired includes last_pass_expired).
 *
 * Returns true when the worker is configured (pg_inventory preloaded with
 * a pg_inventory.worker_database); otherwise returns false and zeroes
 * *status (status->enabled is false).  Never raises an error; any backend
 * may call it, at any time.
 */
bool
InventoryWorkerGetStatus(InventoryWorkerStatus *status)
{
	if (inventory_shared == NULL)
	{
		memset(status, 0, sizeof(InventoryWorkerStatus));
		return false;
	}
	SpinLockAcquire(&inventory_shared->mutex);
	memcpy(status, &inventory_shared->status, sizeof(InventoryWorkerStatus));
	SpinLockRelease(&inventory_shared->mutex);
	return true;
}

/* ------------------------------------------------------- wake at commit */

/*
 * InventoryXactCallback
 *		At commit of a transaction that changed what the launcher or the
 *		worker look at, sets their latch; at abort, forgets it.
 */
static void
InventoryXactCallback(XactEvent event, void *arg)
{
	Latch	   *launcher = NULL;
	Latch	   *worker = NULL;

	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (inventory_shared != NULL &&
				(wake_launcher_at_commit || wake_worker_at_commit))
			{
				SpinLockAcquire(&inventory_shared->mutex);
				if (wake_launcher_at_commit)
				{
					inventory_shared->launcher_wakeup = true;
					launcher = inventory_shared->launcher_latch;
				}
				if (wake_worker_at_commit)
					worker = inventory_shared->worker_latch;
				SpinLockRelease(&inventory_shared->mutex);
				if (launcher != NULL)
					SetLatch(launcher);
				if (worker != NULL)
					SetLatch(worker);
			}
			wake_launcher_at_commit = false;
			wake_worker_at_commit = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			wake_launcher_at_commit = false;
			wake_worker_at_commit = false;
			break;
		default:
			break;
	}
}

/*
 * InventoryObjectAccess
 *		object_access_hook: notes what the launcher or the worker must see
 *		at once, to wake them when the transaction commits: a database that
 *		may be the worker's appearing, the worker's database dropped or
 *		renamed, an extension created in it (the launcher may have to start
 *		the worker) or dropped there (the worker has to leave).  Cheap for
 *		every other object.
 */
static void
InventoryObjectAccess(ObjectAccessType access, Oid classId, Oid objectId,
					  int subId, void *arg)
{
	Oid			worker_db;

	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);

	if (inventory_shared == NULL ||
		(classId != DatabaseRelationId && classId != ExtensionRelationId) ||
		(access != OAT_POST_CREATE && access != OAT_DROP &&
		 access != OAT_POST_ALTER))
		return;

	SpinLockAcquire(&inventory_shared->mutex);
	worker_db = inventory_shared->status.database_oid;
	SpinLockRelease(&inventory_shared->mutex);

	if (classId == DatabaseRelationId)
	{
		/*
		 * While the worker's database is missing, a database created or
		 * renamed may be it; once it is known, only its own drop or rename
		 * matters.
		 */
		if (OidIsValid(worker_db) ? objectId == worker_db :
			access != OAT_DROP)
			wake_launcher_at_commit = true;
	}
	else if (OidIsValid(MyDatabaseId) && MyDatabaseId == worker_db)
	{
		if (access == OAT_POST_CREATE)
			wake_launcher_at_commit = true;
		else if (access == OAT_DROP)
			wake_worker_at_commit = true;
	}
	if (!wake_launcher_at_commit && !wake_worker_at_commit)
		return;

	if (!xact_callback_registered)
	{
		RegisterXactCallback(InventoryXactCallback, NULL);
		xact_callback_registered = true;
	}
}

/*
 * InventoryRegisterWorker
 *		Sets up scheduled expiry; called by _PG_init while the postmaster
 *		loads shared_preload_libraries, only when
 *		pg_inventory.worker_database names a database.
 *
 * Requests the shared status (shmem_request_hook, shmem_startup_hook),
 * installs the object_access_hook that wakes the launcher and the worker
 * at commit (inherited by every backend), and registers the launcher, a
 * static background worker the postmaster restarts
 * INVENTORY_LAUNCHER_RESTART_S seconds after it dies.  The launcher starts
 * the expiry worker.  No result; no error of its own.
 */
void
InventoryRegisterWorker(void)
{
	BackgroundWorker launcher;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = InventoryShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = InventoryShmemStartup;
	prev_object_access_hook = object_access_hook;
	object_access_hook = InventoryObjectAccess;

	memset(&launcher, 0, sizeof(launcher));
	launcher.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	launcher.bgw_start_time = BgWorkerStart_RecoveryFinished;
	launcher.bgw_restart_time = INVENTORY_LAUNCHER_RESTART_S;
	snprintf(launcher.bgw_library_name, BGW_MAXLEN, "pg_inventory");
	snprintf(launcher.bgw_function_name, BGW_MAXLEN, "InventoryLauncherMain");
	snprintf(launcher.bgw_name, BGW_MAXLEN, INVENTORY_LAUNCHER_NAME);
	snprintf(launcher.bgw_type, BGW_MAXLEN, INVENTORY_LAUNCHER_NAME);
	RegisterBackgroundWorker(&launcher);
}

/* ------------------------------------------------------------ launcher */

/* before_shmem_exit callback of the launcher */
static void
LauncherDetach(int code, Datum arg)
{
	SpinLockAcquire(&inventory_shared->mutex);
	inventory_shared->launcher_latch = NULL;
	inventory_shared->status.launcher_pid = 0;
	inventory_shared->status.launcher_state = INVENTORY_LAUNCHER_STOPPED;
	inventory_shared->status.launcher_next_check = 0;
	SpinLockRelease(&inventory_shared->mutex);
}

/*
 * LauncherSetState
 *		Records the launcher's state and when it looks next (0: when woken),
 *		and shows it in pg_stat_activity.  For the outcomes of a check
 *		(no database, no extension, retry) it counts the checks in a row
 *		with that outcome, shown as "(check N)"; starting a worker is not an
 *		outcome (the worker's exit is), so a check that starts a worker which
 *		finds no extension goes on counting.
 */
static void
LauncherSetState(InventoryLauncherState state, TimestampTz next_check,
				 const char *activity)
{
	char		text[256];

	if (state != INVENTORY_LAUNCHER_WORKER_RUNNING)
	{
		if (state == launcher_outcome)
			launcher_outcome_checks++;
		else
		{
			launcher_outcome = state;
			launcher_outcome_checks = 1;
		}
	}

	SpinLockAcquire(&inventory_shared->mutex);
	inventory_shared->status.launcher_state = state;
	inventory_shared->status.launcher_checks =
		state == INVENTORY_LAUNCHER_WORKER_RUNNING ? 0 : launcher_outcome_checks;
	inventory_shared->status.launcher_next_check = next_check;
	SpinLockRelease(&inventory_shared->mutex);

	if (state == INVENTORY_LAUNCHER_WORKER_RUNNING)
		snprintf(text, sizeof(text), INVENTORY_LAUNCHER_NAME ": %s", activity);
	else
		snprintf(text, sizeof(text), INVENTORY_LAUNCHER_NAME ": %s (check %d)",
				 activity, launcher_outcome_checks);
	pgstat_report_activity(STATE_IDLE, text);
}

/*
 * LauncherFindDatabase
 *		Looks up pg_inventory.worker_database in pg_database (a shared
 *		catalog, readable without a database connection, by a heap scan: the
 *		launcher cannot open non-shared catalogs or indexes).  When it can
 *		take connections, tries a share lock on it without waiting: DROP
 *		DATABASE, ALTER DATABASE RENAME and SET TABLESPACE hold it exclusive,
 *		and a worker started then would only wait and fail.
 */
static LauncherDatabase
LauncherFindDatabase(const char *name, Oid *dboid)
{
	LauncherDatabase result = LAUNCHER_DATABASE_MISSING;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;

	*dboid = InvalidOid;
	pgstat_report_activity(STATE_RUNNING,
						   INVENTORY_LAUNCHER_NAME ": looking up the database in pg_database");
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	(void) GetTransactionSnapshot();

	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tuple = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database form = (Form_pg_database) GETSTRUCT(tuple);

		if (strcmp(NameStr(form->datname), name) != 0)
			continue;
		/* a DROP DATABASE interrupted half-way leaves it invalid */
		if (database_is_invalid_form(form))
			result = LAUNCHER_DATABASE_MISSING;
		else if (!form->datallowconn)
			result = LAUNCHER_DATABASE_NO_CONNECTIONS;
		else
		{
			result = LAUNCHER_DATABASE_READY;
			*dboid = form->oid;
		}
		break;
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);

	if (result == LAUNCHER_DATABASE_READY)
	{
		LOCKTAG		tag;

		SET_LOCKTAG_OBJECT(tag, InvalidOid, DatabaseRelationId, *dboid, 0);
		if (LockAcquire(&tag, AccessShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
			result = LAUNCHER_DATABASE_BUSY;
		/* the lock, if taken, goes with the transaction */
	}

	CommitTransactionCommand();
	pgstat_report_stat(false);
	return result;
}

/*
 * LauncherStartWorker
 *		Registers the expiry worker for database dboid, a dynamic background
 *		worker never restarted by the postmaster, which signals the launcher
 *		when it starts and stops.  Returns its handle, or NULL when every
 *		background worker slot is taken (max_worker_processes).
 */
static BackgroundWorkerHandle *
LauncherStartWorker(Oid dboid)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_inventory");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "InventoryWorkerMain");
	snprintf(worker.bgw_name, BGW_MAXLEN, INVENTORY_WORKER_NAME);
	snprintf(worker.bgw_type, BGW_MAXLEN, INVENTORY_WORKER_NAME);
	worker.bgw_main_arg = ObjectIdGetDatum(dboid);
	worker.bgw_notify_pid = MyProcPid;

	SpinLockAcquire(&inventory_shared->mutex);
	inventory_shared->status.worker_exit = INVENTORY_WORKER_EXIT_NONE;
	SpinLockRelease(&inventory_shared->mutex);

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		return NULL;
	return handle;
}

/*
 * LauncherOrphanRunning
 *		True when an expiry worker started by an earlier launcher (one that
 *		died) still runs: the launcher then starts no second one.
 */
static bool
LauncherOrphanRunning(void)
{
	int			pid;

	SpinLockAcquire(&inventory_shared->mutex);
	pid = inventory_shared->status.worker_pid;
	SpinLockRelease(&inventory_shared->mutex);
	return pid != 0 && BackendPidGetProc(pid) != NULL;
}

/*
 * LauncherWorkerStopped
 *		Our expiry worker has stopped: decides from the reason it gave when
 *		to look again.  No extension: after a delay that doubles from
 *		INVENTORY_EXTENSION_FIRST_MS up to INVENTORY_EXTENSION_MAX_MS
 *		(afresh when it had run until the extension was dropped).  Any
 *		other reason (terminated, or it could not connect): after
 *		INVENTORY_RETRY_MS, by which time a DROP DATABASE that terminated it
 *		has committed.
 */
static void
LauncherWorkerStopped(LauncherLoop *loop, TimestampTz now)
{
	InventoryWorkerExit why;
	char		text[200];

	pfree(loop->handle);
	loop->handle = NULL;
	SpinLockAcquire(&inventory_shared->mutex);
	why = inventory_shared->status.worker_exit;
	SpinLockRelease(&inventory_shared->mutex);

	if (why == INVENTORY_WORKER_EXIT_EXTENSION_DROPPED)
	{
		loop->backoff_ms = 0;
		launcher_outcome = INVENTORY_LAUNCHER_STOPPED;
		launcher_outcome_checks = 0;
	}
	if (why == INVENTORY_WORKER_EXIT_NO_EXTENSION ||
		why == INVENTORY_WORKER_EXIT_EXTENSION_DROPPED)
	{
		loop->backoff_ms = loop->backoff_ms == 0 ? INVENTORY_EXTENSION_FIRST_MS :
			Min(loop->backoff_ms * 2, INVENTORY_EXTENSION_MAX_MS);
		loop->next_check = TimestampTzPlusMilliseconds(now, loop->backoff_ms);
		snprintf(text, sizeof(text),
				 "extension \"pg_inventory\" is not installed in database \"%s\"; next check in %d s",
				 inventory_worker_database, loop->backoff_ms / 1000);
		LauncherSetState(INVENTORY_LAUNCHER_NO_EXTENSION, loop->next_check,
						 text);
	}
	else
	{
		loop->backoff_ms = 0;
		loop->next_check = TimestampTzPlusMilliseconds(now, INVENTORY_RETRY_MS);
		snprintf(text, sizeof(text),
				 "the expiry worker stopped; looking again in %d s",
				 INVENTORY_RETRY_MS / 1000);
		LauncherSetState(INVENTORY_LAUNCHER_RETRY, loop->next_check, text);
	}
}

/*
 * LauncherNoDatabase
 *		The database does not exist or takes no connections: logs that once
 *		(the flag lives in shared memory, so a restarted launcher does not
 *		repeat it) and looks again every INVENTORY_DATABASE_POLL_MS.  A
 *		database of that name made later is a new one, whose missing
 *		extension is reported anew.
 */
static void
LauncherNoDatabase(LauncherLoop *loop, LauncherDatabase found, TimestampTz now)
{
	bool		report;
	char		text[200];

	SpinLockAcquire(&inventory_shared->mutex);
	report = !inventory_shared->status.database_missing_reported;
	inventory_shared->status.database_missing_reported = true;
	inventory_shared->status.database_oid = InvalidOid;
	inventory_shared->status.extension_missing_reported = false;
	SpinLockRelease(&inventory_shared->mutex);

	if (report && found == LAUNCHER_DATABASE_MISSING)
		ereport(LOG,
				(errcode(ERRCODE_UNDEFINED_DATABASE),
				 errmsg("pg_inventory expiry worker: database \"%s\" does not exist",
						inventory_worker_database),
				 errdetail("The launcher looks for it every %d seconds, and when a database is created, and starts the expiry worker once it exists; this is logged once.",
						   INVENTORY_DATABASE_POLL_MS / 1000),
				 errhint("Create the database, or set pg_inventory.worker_database to an existing database with ALTER SYSTEM and restart the server.")));
	else if (report)
		ereport(LOG,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_inventory expiry worker: database \"%s\" does not allow connections",
						inventory_worker_database),
				 errdetail("The launcher looks at it every %d seconds and starts the expiry worker once it allows connections; this is logged once.",
						   INVENTORY_DATABASE_POLL_MS / 1000),
				 errhint("Run ALTER DATABASE %s WITH ALLOW_CONNECTIONS true, or set pg_inventory.worker_database to another database with ALTER SYSTEM and restart the server.",
						 quote_identifier(inventory_worker_database))));

	loop->backoff_ms = 0;
	loop->next_check = TimestampTzPlusMilliseconds(now, INVENTORY_DATABASE_POLL_MS);
	snprintf(text, sizeof(text),
			 found == LAUNCHER_DATABASE_MISSING ?
			 "database \"%s\" does not exist; looking every %d s" :
			 "database \"%s\" does not allow connections; looking every %d s",
			 inventory_worker_database, INVENTORY_DATABASE_POLL_MS / 1000);
	LauncherSetState(INVENTORY_LAUNCHER_NO_DATABASE, loop->next_check, text);
}

/*
 * LauncherCheck
 *		Looks up the database and, when it is there, starts the expiry
 *		worker in it (unless one started by an earlier launcher still runs).
 *		Logs once that a database reported missing exists now, and once
 *		(until a start succeeds) that no worker slot is free.
 */
static void
LauncherCheck(LauncherLoop *loop)
{
	Oid			dboid;
	LauncherDatabase found;
	TimestampTz now;
	bool		appeared;
	char		text[200];

	found = LauncherFindDatabase(inventory_worker_database, &dboid);
	now = GetCurrentTimestamp();
	if (found == LAUNCHER_DATABASE_MISSING ||
		found == LAUNCHER_DATABASE_NO_CONNECTIONS)
	{
		LauncherNoDatabase(loop, found, now);
		return;
	}
	if (found == LAUNCHER_DATABASE_BUSY)
	{
		loop->next_check = TimestampTzPlusMilliseconds(now, INVENTORY_DATABASE_BUSY_MS);
		LauncherSetState(INVENTORY_LAUNCHER_RETRY, loop->next_check,
						 "the database is being dropped, renamed or moved; looking again soon");
		return;
	}
	if (LauncherOrphanRunning())
	{
		loop->next_check = TimestampTzPlusMilliseconds(now, INVENTORY_RETRY_MS);
		LauncherSetState(INVENTORY_LAUNCHER_WORKER_RUNNING, loop->next_check,
						 "an expiry worker started by an earlier launcher runs; waiting for it to stop");
		return;
	}

	SpinLockAcquire(&inventory_shared->mutex);
	appeared = inventory_shared->status.database_missing_reported;
	inventory_shared->status.database_missing_reported = false;
	if (inventory_shared->status.database_oid != dboid)
		inventory_shared->status.extension_missing_reported = false;
	inventory_shared->status.database_oid = dboid;
	SpinLockRelease(&inventory_shared->mutex);
	if (appeared)
		ereport(LOG,
				(errmsg("pg_inventory expiry worker: database \"%s\" exists now; starting the expiry worker",
						inventory_worker_database)));

	loop->handle = LauncherStartWorker(dboid);
	if (loop->handle == NULL)
	{
		if (!loop->no_slot_reported)
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("pg_inventory expiry worker: no background worker slot is free to start it"),
					 errdetail("The launcher tries again every %d seconds; this is logged once until it succeeds.",
							   INVENTORY_RETRY_MS / 1000),
					 errhint("Raise max_worker_processes (a restart is needed).")));
		loop->no_slot_reported = true;
		loop->next_check = TimestampTzPlusMilliseconds(now, INVENTORY_RETRY_MS);
		snprintf(text, sizeof(text),
				 "no background worker slot is free; trying again in %d s",
				 INVENTORY_RETRY_MS / 1000);
		LauncherSetState(INVENTORY_LAUNCHER_RETRY, loop->next_check, text);
		return;
	}
	loop->no_slot_reported = false;
	snprintf(text, sizeof(text), "expiry worker started in database \"%s\"",
			 inventory_worker_database);
	LauncherSetState(INVENTORY_LAUNCHER_WORKER_RUNNING, 0, text);
}

/*
 * InventoryLauncherMain
 *		Entry point of the launcher (bgw_function_name of the static worker
 *		registered by InventoryRegisterWorker); main_arg is unused.
 *
 * Connects to no database and loops until SIGTERM (postmaster shutdown,
 * pg_terminate_backend) or postmaster death: looks up
 * pg_inventory.worker_database, starts the expiry worker there, and decides
 * from the reason the worker gives when it stops when to look again (see
 * the file header); a commit that creates the database or the extension
 * makes it look at once.  Reloads the configuration on SIGHUP.  Never
 * returns; an error ends the process and the postmaster restarts it after
 * INVENTORY_LAUNCHER_RESTART_S seconds.
 */
void
InventoryLauncherMain(Datum main_arg)
{
	LauncherLoop loop;

	memset(&loop, 0, sizeof(loop));
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/* no database: only shared catalogs such as pg_database can be read */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname(INVENTORY_LAUNCHER_NAME);

	SpinLockAcquire(&inventory_shared->mutex);
	inventory_shared->launcher_latch = MyLatch;
	inventory_shared->status.launcher_pid = MyProcPid;
	inventory_shared->status.launcher_state = INVENTORY_LAUNCHER_CHECKING;
	inventory_shared->status.launcher_checks = 0;
	SpinLockRelease(&inventory_shared->mutex);
	before_shmem_exit(LauncherDetach, (Datum) 0);

	ereport(DEBUG1,
			(errmsg_internal(INVENTORY_LAUNCHER_NAME " started for database \"%s\"",
							 inventory_worker_database)));

	for (;;)
	{
		TimestampTz now;
		long		timeout;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		now = GetCurrentTimestamp();

		if (loop.handle != NULL)
		{
			pid_t		pid;
			BgwHandleStatus st = GetBackgroundWorkerPid(loop.handle, &pid);

			if (st == BGWH_POSTMASTER_DIED)
				proc_exit(1);
			if (st == BGWH_STOPPED)
				LauncherWorkerStopped(&loop, now);
		}

		/*
		 * A commit created or dropped the database, or created an extension
		 * in it: look now.  The request is left pending while a worker runs,
		 * so that one made while it was leaving (it had just found no
		 * extension) is seen once it has stopped.
		 */
		if (loop.handle == NULL)
		{
			bool		wakeup;

			SpinLockAcquire(&inventory_shared->mutex);
			wakeup = inventory_shared->launcher_wakeup;
			inventory_shared->launcher_wakeup = false;
			SpinLockRelease(&inventory_shared->mutex);
			if (wakeup)
			{
				loop.next_check = now;
				loop.backoff_ms = 0;
			}
		}

		if (loop.handle == NULL && loop.next_check <= now)
			LauncherCheck(&loop);

		/*
		 * Wait for the worker's start or stop (the postmaster signals us), a
		 * commit that wakes us, or the next check.  While a worker runs,
		 * look at it every minute anyway.
		 */
		if (loop.handle != NULL)
			timeout = 60 * 1000L;
		else
		{
			long		secs;
			int			usecs;

			TimestampDifference(GetCurrentTimestamp(), loop.next_check,
								&secs, &usecs);
			timeout = secs * 1000L + usecs / 1000 + 1;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* ------------------------------------------------------- expiry worker */

/* before_shmem_exit callback of the expiry worker */
static void
WorkerDetach(int code, Datum arg)
{
	SpinLockAcquire(&inventory_shared->mutex);
	inventory_shared->worker_latch = NULL;
	inventory_shared->status.worker_pid = 0;
	inventory_shared->status.worker_state = INVENTORY_WORKER_STOPPED;
	if (inventory_shared->status.worker_exit == INVENTORY_WORKER_EXIT_NONE)
		inventory_shared->status.worker_exit = INVENTORY_WORKER_EXIT_TERMINATED;
	SpinLockRelease(&inventory_shared->mutex);
}

/* Records what the expiry worker is doing, for the status */
static void
WorkerSetState(InventoryWorkerState state)
{
	SpinLockAcquire(&inventory_shared->mutex);
	inventory_shared->status.worker_state = state;
	SpinLockRelease(&inventory_shared->mutex);
}

/*
 * WorkerExtensionLocked
 *		Inside a transaction: true when pg_inventory is installed in this
 *		database, and then holds a share lock on it until the end of the
 *		transaction, so that DROP EXTENSION waits for the transaction (and
 *		the transaction never calls a function being dropped).  Looks again
 *		after the lock, with a new catalog snapshot, in case a DROP
 *		EXTENSION committed while we waited for it.
 */
static bool
WorkerExtensionLocked(void)
{
	Oid			extoid = get_extension_oid("pg_inventory", true);

	if (!OidIsValid(extoid))
		return false;
	LockDatabaseObject(ExtensionRelationId, extoid, 0, AccessShareLock);
	InvalidateCatalogSnapshot();
	return get_extension_oid("pg_inventory", true) == extoid;
}

/*
 * WorkerRunFunction
 *		Inside SPI: SELECT inventory.name($1 .. $nargs)::bigint, prepared
 *		once into *plan and kept; returns its result (NULL as 0), or -1 when
 *		optional and the installed version has no such function.
 */
static int64
WorkerRunFunction(const char *name, int nargs, Oid *argtypes, Datum *args,
				  SPIPlanPtr *plan, bool optional)
{
	bool		isnull;
	Datum		result;

	if (optional &&
		!OidIsValid(LookupFuncName(list_make2(makeString("inventory"),
											  makeString(pstrdup(name))),
								   nargs, argtypes, true)))
		return -1;
	if (*plan == NULL)
	{
		StringInfoData sql;
		SPIPlanPtr	prepared;
		int			i;

		initStringInfo(&sql);
		appendStringInfo(&sql, "SELECT inventory.%s(", name);
		for (i = 0; i < nargs; i++)
			appendStringInfo(&sql, "%s$%d", i > 0 ? ", " : "", i + 1);
		appendStringInfoString(&sql, ")::bigint");
		prepared = SPI_prepare(sql.data, nargs, argtypes);
		if (prepared == NULL)
			elog(ERROR, "SPI_prepare of %s failed: %s", name,
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(prepared) != 0)
			elog(ERROR, "SPI_keepplan of %s failed", name);
		*plan = prepared;
	}
	if (SPI_execute_plan(*plan, args, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "inventory.%s did not return one row", name);
	result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
						   &isnull);
	return isnull ? 0 : DatumGetInt64(result);
}

/*
 * WorkerRunExpire
 *		Inside SPI: inventory.expire_due(batch_size); returns how many
 *		reservations it expired (read as bigint, whatever integer type the
 *		installed version returns).
 */
static int64
WorkerRunExpire(void)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(inventory_worker_batch_size)};

	return WorkerRunFunction("expire_due", 1, argtypes, args, &expire_plan,
							 false);
}

/*
 * WorkerRunPurge
 *		Inside SPI: inventory.purge_published(outbox_retention,
 *		INVENTORY_PURGE_MAX_ROWS) when the installed version has it; returns
 *		how many events it deleted, or -1 when the function does not exist.
 */
static int64
WorkerRunPurge(void)
{
	Oid			argtypes[2] = {INTERVALOID, INT4OID};
	Datum		args[2];
	Interval	retention;

	memset(&retention, 0, sizeof(retention));
	retention.time = (int64) inventory_outbox_retention_s * USECS_PER_SEC;
	args[0] = IntervalPGetDatum(&retention);
	args[1] = Int32GetDatum(INVENTORY_PURGE_MAX_ROWS);
	return WorkerRunFunction("purge_published", 2, argtypes, args, &purge_plan,
							 true);
}

/*
 * WorkerRunHistory
 *		Inside SPI: inventory.purge_history(history_retention,
 *		INVENTORY_HISTORY_MAX_ROWS, false) when the installed version has it;
 *		returns how many reservations it removed, or -1 when the function
 *		does not exist.
 */
static int64
WorkerRunHistory(void)
{
	Oid			argtypes[3] = {INTERVALOID, INT4OID, BOOLOID};
	Datum		args[3];
	Interval	retention;

	memset(&retention, 0, sizeof(retention));
	retention.time = (int64) inventory_history_retention_s * USECS_PER_SEC;
	args[0] = IntervalPGetDatum(&retention);
	args[1] = Int32GetDatum(INVENTORY_HISTORY_MAX_ROWS);
	args[2] = BoolGetDatum(false);
	return WorkerRunFunction("purge_history", 3, argtypes, args, &history_plan,
							 true);
}

/*
 * WorkerRunLowWater
 *		Inside SPI: inventory.advance_outbox_low_water(from_start) when the
 *		installed version has it (0.7 on); returns the mark, or -1 when the
 *		function does not exist.
 */
static int64
WorkerRunLowWater(bool from_start)
{
	Oid			argtypes[1] = {BOOLOID};
	Datum		args[1] = {BoolGetDatum(from_start)};

	return WorkerRunFunction("advance_outbox_low_water", 1, argtypes, args,
							 &low_water_plan, true);
}

/*
 * WorkerEmitLog
 *		emit_log_hook of the expiry worker: a WARNING with the SQLSTATE and
 *		message of one logged less than INVENTORY_ERROR_REPEAT_MS ago is not
 *		written to the server log, only counted; when it is logged again,
 *		its detail says how many were left out.  Other messages pass.
 */
static void
WorkerEmitLog(ErrorData *edata)
{
	if (edata->elevel == WARNING && edata->output_to_server &&
		edata->message != NULL)
	{
		uint32		hash = hash_bytes((const unsigned char *) edata->message,
									  strlen(edata->message));
		TimestampTz now = GetCurrentTimestamp();
		WorkerWarning *entry = NULL;
		int			i;

		for (i = 0; i < WORKER_WARNINGS_KEPT; i++)
		{
			WorkerWarning *w = &worker_warnings[i];

			if (w->logged_at != 0 && w->sqlerrcode == edata->sqlerrcode &&
				w->hash == hash)
			{
				entry = w;
				break;
			}
			/* else remember the oldest (or an empty) entry to replace */
			if (entry == NULL || w->logged_at < entry->logged_at)
				entry = w;
		}
		if (i < WORKER_WARNINGS_KEPT &&
			!TimestampDifferenceExceeds(entry->logged_at, now,
										INVENTORY_ERROR_REPEAT_MS))
		{
			entry->not_logged++;
			edata->output_to_server = false;
		}
		else
		{
			if (i < WORKER_WARNINGS_KEPT && entry->not_logged > 0)
				edata->detail = psprintf("%s%s" INT64_FORMAT " more like it in the last minute were not logged.",
										 edata->detail ? edata->detail : "",
										 edata->detail ? " " : "",
										 entry->not_logged);
			entry->sqlerrcode = edata->sqlerrcode;
			entry->hash = hash;
			entry->logged_at = now;
			entry->not_logged = 0;
		}
	}
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

/*
 * WorkerReportError
 *		Counts a caught error of a step in the status and logs it as a
 *		WARNING with its SQLSTATE (in the message, whatever
 *		log_error_verbosity says), its detail and context.  WorkerEmitLog
 *		keeps the same error from being logged more than once a minute.
 */
static void
WorkerReportError(const char *step, ErrorData *edata)
{
	char		sqlstate[6];
	const char *message = edata->message ? edata->message : "(no message)";

	strlcpy(sqlstate, unpack_sql_state(edata->sqlerrcode), sizeof(sqlstate));

	SpinLockAcquire(&inventory_shared->mutex);
	inventory_shared->status.total_errors++;
	inventory_shared->status.last_error_at = GetCurrentTimestamp();
	strlcpy(inventory_shared->status.last_error_sqlstate, sqlstate,
			sizeof(inventory_shared->status.last_error_sqlstate));
	strlcpy(inventory_shared->status.last_error_message, message,
			sizeof(inventory_shared->status.last_error_message));
	SpinLockRelease(&inventory_shared->mutex);

	ereport(WARNING,
			(errcode(edata->sqlerrcode),
			 errmsg("pg_inventory expiry worker: %s failed with SQLSTATE %s: %s",
					step, sqlstate, message),
			 edata->detail != NULL ? errdetail_internal("%s", edata->detail) : 0,
			 errhint("The worker rolled back this step and carries on at its next pass; it logs the same warning at most once a minute."),
			 edata->context != NULL ? errcontext_msg("%s", edata->context) : 0));
}

/* The SQL function a step runs, for messages */
static const char *
WorkerStepName(WorkerStepKind kind)
{
	switch (kind)
	{
		case WORKER_STEP_EXPIRE:
			return "expire_due";
		case WORKER_STEP_PURGE:
			return "purge_published";
		case WORKER_STEP_HISTORY:
			return "purge_history";
		case WORKER_STEP_LOW_WATER:
		case WORKER_STEP_LOW_WATER_FULL:
			return "advance_outbox_low_water";
	}
	return "?";
}

/*
 * WorkerTransaction
 *		Runs work(arg) in a transaction of its own, as every step of the
 *		worker runs: the extension locked first (WORKER_STEP_NO_EXTENSION
 *		when it is not installed), activity (if not empty) shown in
 *		pg_stat_activity, state (unless INVENTORY_WORKER_IDLE) in
 *		worker_status, SPI connected with a snapshot.  An error is caught
 *		here, as autovacuum does for a table: the transaction is rolled
 *		back, the error logged as a WARNING naming step and counted, and
 *		WORKER_STEP_FAILED returned; FATAL errors and SIGTERM are not
 *		caught.  Else returns what work returned.
 */
static WorkerStepResult
WorkerTransaction(const char *activity, InventoryWorkerState state,
				  WorkerStepResult (*work) (void *), void *arg,
				  const char *step)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile WorkerStepResult result = WORKER_STEP_DONE;

	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		if (!WorkerExtensionLocked())
			result = WORKER_STEP_NO_EXTENSION;
		else
		{
			if (state != INVENTORY_WORKER_IDLE)
				WorkerSetState(state);
			if (activity[0] != '\0')
				pgstat_report_activity(STATE_RUNNING, activity);
			PushActiveSnapshot(GetTransactionSnapshot());
			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "SPI_connect failed");
			result = work(arg);
			if (SPI_finish() != SPI_OK_FINISH)
				elog(ERROR, "SPI_finish failed");
			PopActiveSnapshot();
		}
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/* as autovacuum: no interrupt while we clean up */
		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		RESUME_INTERRUPTS();

		result = WORKER_STEP_FAILED;
		WorkerReportError(step, edata);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	return result;
}

/* A step of a pass, for WorkerTransaction: what it did in *rows */
typedef struct StepArg
{
	WorkerStepKind kind;
	int64	   *rows;
} StepArg;

static WorkerStepResult
StepWork(void *p)
{
	StepArg    *arg = (StepArg *) p;

	if (arg->kind == WORKER_STEP_EXPIRE)
	{
		*arg->rows = WorkerRunExpire();
		return WORKER_STEP_DONE;
	}
	if (arg->kind == WORKER_STEP_PURGE)
		*arg->rows = WorkerRunPurge();
	else if (arg->kind == WORKER_STEP_HISTORY)
		*arg->rows = WorkerRunHistory();
	else
		*arg->rows = WorkerRunLowWater(arg->kind == WORKER_STEP_LOW_WATER_FULL);
	if (*arg->rows < 0)
	{
		*arg->rows = 0;
		return WORKER_STEP_SKIPPED;
	}
	return WORKER_STEP_DONE;
}

/*
 * WorkerStep
 *		One step of a pass in its own transaction: expire_due,
 *		purge_published or purge_history, after locking the extension.
 *		*rows receives what it expired, deleted or removed.  An error is
 *		caught here, as autovacuum does for a table: the transaction is
 *		rolled back, the error logged and counted, and the caller goes on;
 *		FATAL errors and SIGTERM are not caught.
 */
static WorkerStepResult
WorkerStep(WorkerStepKind kind, int64 *rows)
{
	WorkerStepResult result;
	StepArg		arg;
	char		activity[200];

	*rows = 0;
	if (kind == WORKER_STEP_EXPIRE)
	{
		snprintf(activity, sizeof(activity),
				 INVENTORY_WORKER_NAME ": expiring: expire_due(%d)",
				 inventory_worker_batch_size);
	}
	else if (kind == WORKER_STEP_PURGE)
	{
		snprintf(activity, sizeof(activity),
				 INVENTORY_WORKER_NAME ": purging: purge_published('%d seconds', %d)",
				 inventory_outbox_retention_s, INVENTORY_PURGE_MAX_ROWS);
	}
	else if (kind == WORKER_STEP_HISTORY)
	{
		snprintf(activity, sizeof(activity),
				 INVENTORY_WORKER_NAME ": purging history: purge_history('%d seconds', %d)",
				 inventory_history_retention_s, INVENTORY_HISTORY_MAX_ROWS);
	}
	else
	{
		snprintf(activity, sizeof(activity),
				 INVENTORY_WORKER_NAME ": advancing: advance_outbox_low_water(%s)",
				 kind == WORKER_STEP_LOW_WATER_FULL ? "true" : "false");
	}

	arg.kind = kind;
	arg.rows = rows;
	result = WorkerTransaction(activity,
							   kind == WORKER_STEP_EXPIRE ? INVENTORY_WORKER_EXPIRING :
							   kind == WORKER_STEP_PURGE ? INVENTORY_WORKER_PURGING :
							   kind == WORKER_STEP_HISTORY ? INVENTORY_WORKER_PURGING_HISTORY :
							   INVENTORY_WORKER_ADVANCING,
							   StepWork, &arg, WorkerStepName(kind));
	if (result == WORKER_STEP_FAILED)
		*rows = 0;
	WorkerSetState(INVENTORY_WORKER_IDLE);
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
	return result;
}

/*
 * WorkerReportIdle
 *		Between passes: shows in pg_stat_activity (query, state idle) when
 *		the last pass ended and what it did, e.g. "pg_inventory expiry
 *		worker: idle, last pass at 2026-12-01 10:00:00.5+00, expired 3,
 *		purged 0, next in 1000 ms" (the time in the server's TimeZone;
 *		", history purged N" after purged when pg_inventory.history_retention
 *		is set).
 */
static void
WorkerReportIdle(TimestampTz at, int64 expired, int64 purged,
				 int64 history_purged)
{
	char		activity[256];
	char		history[64] = "";

	if (inventory_history_retention_s > 0)
		snprintf(history, sizeof(history), ", history purged " INT64_FORMAT,
				 history_purged);
	snprintf(activity, sizeof(activity),
			 INVENTORY_WORKER_NAME ": idle, last pass at %s, expired " INT64_FORMAT
			 ", purged " INT64_FORMAT "%s, next in %d ms",
			 timestamptz_to_str(at), expired, purged, history,
			 inventory_worker_interval_ms);
	pgstat_report_activity(STATE_IDLE, activity);
}

/*
 * WorkerNoExtension
 *		The extension is not installed (dropped, when ran says that passes
 *		ran before): logs that once until it is found again, tells the
 *		launcher why we stop, and exits with code 0, leaving the database at
 *		once.
 */
static void
WorkerNoExtension(bool ran)
{
	bool		report;

	SpinLockAcquire(&inventory_shared->mutex);
	report = !inventory_shared->status.extension_missing_reported;
	inventory_shared->status.extension_missing_reported = true;
	inventory_shared->status.worker_exit = ran ?
		INVENTORY_WORKER_EXIT_EXTENSION_DROPPED :
		INVENTORY_WORKER_EXIT_NO_EXTENSION;
	SpinLockRelease(&inventory_shared->mutex);

	if (report)
		ereport(LOG,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("pg_inventory expiry worker: extension \"pg_inventory\" is not installed in database \"%s\"",
						inventory_worker_database),
				 errdetail("The expiry worker leaves the database; the launcher looks again after 5 seconds, then less often up to once a minute, and at once when an extension is created there; this is logged once."),
				 errhint("Run CREATE EXTENSION pg_inventory in database \"%s\", or set pg_inventory.worker_database to the database that has it with ALTER SYSTEM and restart the server.",
						 inventory_worker_database)));
	proc_exit(0);
}

/* ------------------------------------------------- automatic slotting */

/*
 * Automatic slotting (issue #12: a flash sale without tuning).  Every
 * pg_inventory.auto_slots_interval, between expiry passes, the worker
 * samples the lock waits on rows of inventory.stock_slot: the tuple locks
 * in pg_locks on that relation (a backend holds or waits for one only
 * while it waits for a row another transaction locked), mapped to the
 * (tenant, sku) of the row version they name.  A SKU with one slot whose
 * slots show waiters in pg_inventory.auto_slots_samples samples in a row
 * is split (AutoSlotTarget: four times the callers seen in the last sample,
 * as a power of two from 4 to pg_inventory.auto_slots) by
 * inventory.set_stock_slots
 * itself (the same locks, rebalancing and audit row as an operator's call;
 * the audit's reason says it was the worker); a SKU the worker split is
 * merged back into one slot once it has had no waiters for
 * pg_inventory.auto_slots_idle, if its slot count is still the one the
 * worker set.  set_stock_slots works per SKU (all its locations), so
 * automatic slotting does too.  The SKUs it split are remembered in the
 * worker's memory only (schema 0.5 has no column for it): after a restart
 * of the worker they stay split until an operator merges them.
 */
#define AUTO_SLOTS_TRACKED	1024	/* SKUs followed at most */
/*
 * How long a slot change may wait, in all (AutoSlotChange).  A merge comes
 * when nobody has waited for minutes, so a wait means a transaction left
 * open on a slot: AUTO_SLOTS_MERGE_WAIT_MS, short, as it must not stall
 * the worker's expiry.  A split is for callers queued on the slot, and
 * joins the end of their queue: 64 buyers on one slot at 100 commits a
 * second hold it for 0.6 s before the worker's turn comes (the bench's
 * flash sale, where a 200 ms wait never got through), so it may wait
 * AUTO_SLOTS_SPLIT_WAIT_MS.  After a failed change the SKU is left alone
 * for AUTO_SLOTS_FIRST_RETRY_USECS, doubled after each further failure up
 * to AUTO_SLOTS_RETRY_USECS: while the rush lasts the next try comes
 * within seconds; a transaction left open on the slot costs a few tries,
 * then one every 30 s.  One round of slotting starts no change after
 * AUTO_SLOTS_ROUND_USECS (the rest wait for the next round, after an
 * expiry pass when one is due), so many blocked SKUs never hold expiry
 * back for more than about 2 s + 2 s.
 */
#define AUTO_SLOTS_SPLIT_WAIT_MS	2000
#define AUTO_SLOTS_MERGE_WAIT_MS	200
#define AUTO_SLOTS_FIRST_RETRY_USECS	USECS_PER_SEC
#define AUTO_SLOTS_ROUND_USECS	(2 * USECS_PER_SEC)
#define AUTO_SLOTS_RETRY_USECS	(30 * USECS_PER_SEC)

typedef struct AutoSlotSku
{
	char	   *tenant;			/* NULL: an empty entry */
	char	   *sku;
	int			streak;			/* samples in a row with waiters */
	int64		last_sample;	/* the last sample that saw waiters */
	int			waiters;		/* waiters in that sample */
	TimestampTz last_waiters_at;
	int			split_to;		/* slots the worker set, 0: not split by it */
	TimestampTz retry_after;	/* after a failed change: not before */
	int64		retry_usecs;	/* the wait after the next failure */
} AutoSlotSku;

/* After a failed change of e that ended at now: when to try again (later after each failure) */
static void
AutoSlotRetryLater(AutoSlotSku *e, TimestampTz now)
{
	if (e->retry_usecs < AUTO_SLOTS_FIRST_RETRY_USECS)
		e->retry_usecs = AUTO_SLOTS_FIRST_RETRY_USECS;
	e->retry_after = now + e->retry_usecs;
	e->retry_usecs = Min(e->retry_usecs * 2, AUTO_SLOTS_RETRY_USECS);
}

static AutoSlotSku auto_slot_skus[AUTO_SLOTS_TRACKED];
static int64 auto_slot_samples = 0;
static int	auto_slot_cursor = 0;	/* where the next round of changes starts */
static SPIPlanPtr auto_locks_plan = NULL;

/*
 * The slots a split gives a SKU that had waiters waiting on it: four times
 * the callers seen (waiters and the holder), rounded up to a power of two,
 * at least 4, at most pg_inventory.auto_slots.  A sample sees only part of
 * a queue (the waiters on a tuple lock; those between two waits or waiting
 * for a transaction without one are missed): 64 buyers show as 13 to 23
 * waiters in the bench, which gets them the default maximum of 64; a
 * queue of 2 waiters gets 16.
 */
static int
AutoSlotTarget(int waiters)
{
	int			target = 4;

	while (target < 4 * (waiters + 1) && target < inventory_auto_slots)
		target *= 2;
	return Min(target, inventory_auto_slots);
}

/* Finds (or, with create, adds) the entry of (tenant, sku); NULL if full */
static AutoSlotSku *
AutoSlotFind(const char *tenant, const char *sku, bool create)
{
	AutoSlotSku *empty = NULL;
	int			i;

	for (i = 0; i < AUTO_SLOTS_TRACKED; i++)
	{
		AutoSlotSku *e = &auto_slot_skus[i];

		if (e->tenant == NULL)
		{
			if (empty == NULL)
				empty = e;
			continue;
		}
		if (strcmp(e->tenant, tenant) == 0 && strcmp(e->sku, sku) == 0)
			return e;
	}
	if (!create || empty == NULL)
		return NULL;
	memset(empty, 0, sizeof(AutoSlotSku));
	empty->tenant = MemoryContextStrdup(TopMemoryContext, tenant);
	empty->sku = MemoryContextStrdup(TopMemoryContext, sku);
	return empty;
}

static void
AutoSlotForget(AutoSlotSku *e)
{
	pfree(e->tenant);
	pfree(e->sku);
	memset(e, 0, sizeof(AutoSlotSku));
}

/*
 * AutoSlotSample
 *		Inside a transaction with SPI: one sample.  Reads the tuple locks on
 *		inventory.stock_slot of this database, maps each to the (tenant,
 *		sku) of the row version it names (any version: tenant and sku of a
 *		slot row never change, and the version waited for may be dead by
 *		now), and records in auto_slot_skus which SKUs had waiters.
 *		Returns false when the installed schema has no slots (0.1, 0.2).
 */
static bool
AutoSlotSample(TimestampTz now)
{
	Oid			nsp = get_namespace_oid("inventory", true);
	Oid			relid = OidIsValid(nsp) ? get_relname_relid("stock_slot", nsp) :
		InvalidOid;
	Datum		args[2];
	Relation	rel;
	TupleTableSlot *slot;
	AttrNumber	tenant_att;
	AttrNumber	sku_att;
	BlockNumber nblocks;
	uint64		n;
	uint64		i;
	int			k;

	if (!OidIsValid(relid))
		return false;
	if (auto_locks_plan == NULL)
	{
		Oid			argtypes[2] = {OIDOID, OIDOID};
		SPIPlanPtr	plan = SPI_prepare("SELECT l.page, l.tuple, count(*)::integer "
									   "FROM pg_catalog.pg_locks l "
									   "WHERE l.locktype = 'tuple' AND l.database = $1 "
									   "AND l.relation = $2 GROUP BY l.page, l.tuple",
									   2, argtypes);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare of the lock sample failed: %s",
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan of the lock sample failed");
		auto_locks_plan = plan;
	}
	args[0] = ObjectIdGetDatum(MyDatabaseId);
	args[1] = ObjectIdGetDatum(relid);
	if (SPI_execute_plan(auto_locks_plan, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "the lock sample failed");
	n = SPI_processed;
	auto_slot_samples++;
	if (n == 0)
		return true;

	rel = table_open(relid, AccessShareLock);
	tenant_att = get_attnum(relid, "tenant");
	sku_att = get_attnum(relid, "sku");
	if (tenant_att == InvalidAttrNumber || sku_att == InvalidAttrNumber)
		elog(ERROR, "inventory.stock_slot has no tenant or sku column");
	slot = table_slot_create(rel, NULL);
	nblocks = RelationGetNumberOfBlocks(rel);
	for (i = 0; i < n; i++)
	{
		bool		isnull;
		int64		page = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
													   SPI_tuptable->tupdesc, 1, &isnull));
		int32		tuple;
		int32		waiters;
		ItemPointerData tid;
		Datum		d;
		char	   *tenant;
		char	   *sku;
		AutoSlotSku *e;

		if (isnull || page < 0 || (BlockNumber) page >= nblocks)
			continue;
		tuple = DatumGetInt16(SPI_getbinval(SPI_tuptable->vals[i],
											SPI_tuptable->tupdesc, 2, &isnull));
		if (isnull || tuple < 1)
			continue;
		waiters = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
											  SPI_tuptable->tupdesc, 3, &isnull));
		ItemPointerSet(&tid, (BlockNumber) page, (OffsetNumber) tuple);
		if (!table_tuple_fetch_row_version(rel, &tid, SnapshotAny, slot))
			continue;			/* pruned meanwhile */
		d = slot_getattr(slot, tenant_att, &isnull);
		if (isnull)
			continue;
		tenant = TextDatumGetCString(d);
		d = slot_getattr(slot, sku_att, &isnull);
		if (isnull)
			continue;
		sku = TextDatumGetCString(d);
		e = AutoSlotFind(tenant, sku, true);
		if (e == NULL)
			continue;			/* following too many SKUs: the next sample */
		if (e->last_sample == auto_slot_samples)
			e->waiters += waiters;	/* another row of the same SKU */
		else
		{
			e->streak = e->last_sample == auto_slot_samples - 1 ?
				e->streak + 1 : 1;
			e->last_sample = auto_slot_samples;
			e->waiters = waiters;
		}
		e->last_waiters_at = now;
	}
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, AccessShareLock);

	/*
	 * a SKU not split by us that missed a sample starts again (its streak
	 * does anyway), unless a failed split is backing off: then it keeps
	 * its backoff until the next try is due
	 */
	for (k = 0; k < AUTO_SLOTS_TRACKED; k++)
	{
		AutoSlotSku *e = &auto_slot_skus[k];

		if (e->tenant != NULL && e->split_to == 0 &&
			e->last_sample < auto_slot_samples && now >= e->retry_after)
			AutoSlotForget(e);
	}
	return true;
}

/*
 * AutoSlotAllowed
 *		Inside a transaction with SPI, args (tenant, sku): whether the worker
 *		may change the slots of the SKU.  Not when the last set_stock_slots
 *		of the SKU in inventory.operator_audit (0.5) was an operator's, not
 *		the worker's: an operator's count, even 1, is kept.  For a split
 *		also not when a location of the SKU keeps a safety stock: a SKU with
 *		several slots and a safety stock takes no fast path (every call
 *		locks all its slots), so a split would only cost.
 */
static bool
AutoSlotAllowed(Datum *args, bool split)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	bool		isnull;

	if (SPI_execute("SELECT pg_catalog.to_regclass('inventory.operator_audit') IS NOT NULL",
					true, 1) != SPI_OK_SELECT)
		elog(ERROR, "reading the schema failed");
	if (!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
									SPI_tuptable->tupdesc, 1, &isnull)))
		return true;			/* before 0.5: no audit, no safety stock */
	if (SPI_execute_with_args("SELECT EXISTS (SELECT 1 FROM ("
							  "SELECT a.reason FROM inventory.operator_audit a "
							  "WHERE a.action = 'set_stock_slots' AND a.tenant = $1 "
							  "AND a.detail->>'sku' = $2 ORDER BY a.id DESC LIMIT 1) l "
							  "WHERE l.reason IS NULL OR l.reason NOT LIKE "
							  "'automatic slotting by the expiry worker%')",
							  2, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "reading the audit failed");
	if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
								   SPI_tuptable->tupdesc, 1, &isnull)))
		return false;
	if (!split)
		return true;
	if (SPI_execute_with_args("SELECT EXISTS (SELECT 1 FROM inventory.stock_location l "
							  "WHERE l.tenant = $1 AND l.sku = $2 AND l.safety_stock > 0)",
							  2, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "reading the safety stock failed");
	return !DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * AutoSlotChange
 *		Inside a transaction with SPI: sets the slots of (tenant, sku) from
 *		from to to by inventory.set_stock_slots, after locking the SKU's
 *		catalog row as set_stock_slots does first (FOR NO KEY UPDATE, the
 *		same lock order) and checking that it still has from slots (an
 *		operator may have changed them).  The whole try (every lock wait of
 *		both statements, and the rows a queue hands on from one holder to
 *		the next) is bounded by a timer of AUTO_SLOTS_SPLIT_WAIT_MS (from 1
 *		slot) or AUTO_SLOTS_MERGE_WAIT_MS (back to 1), PostgreSQL's
 *		statement timeout (ERROR 57014), and each lock wait by lock_timeout
 *		(55P03) as well; the timer is off again on every path.  Returns
 *		false when the count was not from (or the SKU is gone): nothing
 *		changed.
 */
static bool
AutoSlotChange(const char *tenant, const char *sku, int from, int to,
			   const char *reason)
{
	Oid			argtypes[3] = {TEXTOID, TEXTOID, INT4OID};
	Datum		args[3];
	bool		isnull;
	volatile bool changed = false;
	int			wait_ms = from == 1 ? AUTO_SLOTS_SPLIT_WAIT_MS :
		AUTO_SLOTS_MERGE_WAIT_MS;

	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(sku);
	args[2] = Int32GetDatum(to);
	/* a plain read first: a SKU an operator split costs no lock here */
	if (SPI_execute_with_args("SELECT k.slots FROM inventory.sku k "
							  "WHERE k.tenant = $1 AND k.sku = $2",
							  2, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "reading the SKU failed");
	if (SPI_processed != 1 ||
		DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
									SPI_tuptable->tupdesc, 1, &isnull)) != from)
		return false;
	if (!AutoSlotAllowed(args, from == 1))
		return false;
	if (SPI_execute(psprintf("SELECT pg_catalog.set_config('lock_timeout', '%dms', true)",
							 wait_ms), false, 0) != SPI_OK_SELECT)
		elog(ERROR, "setting lock_timeout failed");
	enable_timeout_after(STATEMENT_TIMEOUT, wait_ms);
	PG_TRY();
	{
		bool		slots_null = true;
		int			slots = -1;

		if (SPI_execute_with_args("SELECT k.slots FROM inventory.sku k "
								  "WHERE k.tenant = $1 AND k.sku = $2 FOR NO KEY UPDATE",
								  2, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "locking the SKU failed");
		if (SPI_processed == 1)
			slots = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
												SPI_tuptable->tupdesc, 1,
												&slots_null));
		if (!slots_null && slots == from)
		{
			inventory_slots_audit_reason = reason;
			if (SPI_execute_with_args("SELECT inventory.set_stock_slots($1, $2, $3)",
									  3, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
				elog(ERROR, "inventory.set_stock_slots failed");
			changed = true;
		}
	}
	PG_FINALLY();
	{
		disable_timeout(STATEMENT_TIMEOUT, false);
		inventory_slots_audit_reason = NULL;
	}
	PG_END_TRY();
	return changed;
}

/* What AutoSlotStep does in its transaction */
typedef enum AutoSlotAction
{
	AUTO_SLOT_SAMPLE,
	AUTO_SLOT_SPLIT,
	AUTO_SLOT_MERGE
} AutoSlotAction;

/* A transaction of automatic slotting, for WorkerTransaction */
typedef struct AutoSlotArg
{
	AutoSlotAction action;
	AutoSlotSku *e;
	int			target;
	const char *reason;
} AutoSlotArg;

static WorkerStepResult
AutoSlotWork(void *p)
{
	AutoSlotArg *arg = (AutoSlotArg *) p;

	if (arg->action == AUTO_SLOT_SAMPLE)
		return AutoSlotSample(GetCurrentTimestamp()) ? WORKER_STEP_DONE :
			WORKER_STEP_SKIPPED;
	return AutoSlotChange(arg->e->tenant, arg->e->sku,
						  arg->action == AUTO_SLOT_SPLIT ? 1 : arg->e->split_to,
						  arg->target, arg->reason) ? WORKER_STEP_DONE :
		WORKER_STEP_SKIPPED;
}

/*
 * AutoSlotStep
 *		One transaction of automatic slotting, errors caught as WorkerStep
 *		catches them (rolled back, logged as a WARNING, counted): a sample,
 *		or the split or merge of entry e.  Returns WORKER_STEP_DONE,
 *		WORKER_STEP_SKIPPED (no slots in this schema; the SKU's slot count
 *		was not what we expected), WORKER_STEP_FAILED or
 *		WORKER_STEP_NO_EXTENSION.
 */
static WorkerStepResult
AutoSlotStep(AutoSlotAction action, AutoSlotSku *e)
{
	WorkerStepResult result;
	AutoSlotArg arg;
	char		activity[200] = "";
	char		reason[200] = "";
	int			target = action == AUTO_SLOT_SPLIT ? AutoSlotTarget(e->waiters) : 1;

	if (action == AUTO_SLOT_SPLIT)
	{
		snprintf(reason, sizeof(reason),
				 "automatic slotting by the expiry worker: lock waits on the SKU's stock slot in %d samples in a row (%d waiters in the last)",
				 e->streak, e->waiters);
		snprintf(activity, sizeof(activity),
				 INVENTORY_WORKER_NAME ": slotting: set_stock_slots(%d)",
				 target);
	}
	else if (action == AUTO_SLOT_MERGE)
	{
		snprintf(reason, sizeof(reason),
				 "automatic slotting by the expiry worker: no lock waits on the SKU's stock slots for %d s",
				 inventory_auto_slots_idle_s);
		snprintf(activity, sizeof(activity),
				 INVENTORY_WORKER_NAME ": slotting: set_stock_slots(1)");
	}

	arg.action = action;
	arg.e = e;
	arg.target = target;
	arg.reason = reason;
	result = WorkerTransaction(activity,
							   action == AUTO_SLOT_SAMPLE ? INVENTORY_WORKER_IDLE :
							   INVENTORY_WORKER_SLOTTING, AutoSlotWork,
							   &arg, action == AUTO_SLOT_SAMPLE ?
							   "automatic slotting (sample)" :
							   "automatic slotting (set_stock_slots)");
	if (action != AUTO_SLOT_SAMPLE)
		WorkerSetState(INVENTORY_WORKER_IDLE);
	if (activity[0] != '\0')
	{
		pgstat_report_stat(false);
		pgstat_report_activity(STATE_IDLE, NULL);
	}
	if (result == WORKER_STEP_DONE && action != AUTO_SLOT_SAMPLE)
		ereport(LOG,
				(errmsg(INVENTORY_WORKER_NAME ": %s SKU \"%s\" of tenant \"%s\" %s %d stock slots",
						action == AUTO_SLOT_SPLIT ? "split" : "merged", e->sku,
						e->tenant, action == AUTO_SLOT_SPLIT ? "over" : "back into",
						target),
				 errdetail("%s.", reason)));
	return result;
}

/*
 * WorkerAutoSlots
 *		One round of automatic slotting: a sample, then the splits and
 *		merges it calls for, each in a transaction of its own.  Does nothing
 *		when pg_inventory.auto_slots is 0 or 1 (SKUs split before stay as
 *		they are).
 */
static void
WorkerAutoSlots(void)
{
	TimestampTz now;
	int			j;

	if (inventory_auto_slots <= 1)
		return;
	switch (AutoSlotStep(AUTO_SLOT_SAMPLE, NULL))
	{
		case WORKER_STEP_NO_EXTENSION:
			WorkerNoExtension(true);
			break;
		case WORKER_STEP_DONE:
			break;
		default:
			return;
	}
	now = GetCurrentTimestamp();
	for (j = 0; j < AUTO_SLOTS_TRACKED; j++)
	{
		int			i = (auto_slot_cursor + j) % AUTO_SLOTS_TRACKED;
		AutoSlotSku *e = &auto_slot_skus[i];
		WorkerStepResult r;

		if (e->tenant == NULL)
			continue;
		if (GetCurrentTimestamp() - now >= AUTO_SLOTS_ROUND_USECS)
		{
			/* the rest in the next round, from here */
			auto_slot_cursor = i;
			return;
		}
		if (e->split_to == 0 && e->streak >= inventory_auto_slots_samples &&
			now >= e->retry_after)
		{
			int			target = AutoSlotTarget(e->waiters);

			r = AutoSlotStep(AUTO_SLOT_SPLIT, e);
			if (r == WORKER_STEP_NO_EXTENSION)
				WorkerNoExtension(true);
			if (r == WORKER_STEP_DONE)
			{
				e->split_to = target;
				e->last_waiters_at = now;
				e->retry_usecs = 0;
			}
			else if (r == WORKER_STEP_SKIPPED)
				AutoSlotForget(e);	/* not one slot: an operator's choice */
			else
				AutoSlotRetryLater(e, GetCurrentTimestamp());
		}
		else if (e->split_to > 0 && inventory_auto_slots_idle_s > 0 &&
				 now - e->last_waiters_at >=
				 (int64) inventory_auto_slots_idle_s * USECS_PER_SEC &&
				 now >= e->retry_after)
		{
			r = AutoSlotStep(AUTO_SLOT_MERGE, e);
			if (r == WORKER_STEP_NO_EXTENSION)
				WorkerNoExtension(true);
			if (r == WORKER_STEP_DONE || r == WORKER_STEP_SKIPPED)
				AutoSlotForget(e);	/* merged, or changed by an operator */
			else
				AutoSlotRetryLater(e, GetCurrentTimestamp());
		}
	}
}

/*
 * WorkerWait
 *		Sleeps until the next pass is due at next_pass, or the next sample
 *		of automatic slotting when that comes first; a set latch (a commit
 *		that dropped the extension, a wakeup) makes the pass due at once
 *		(*next_pass = 0), as before automatic slotting.
 */
static void
WorkerWait(TimestampTz next_pass, TimestampTz *due)
{
	long		wait_ms;
	int			rc;

	wait_ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), next_pass);
	if (inventory_auto_slots > 1)
		wait_ms = Min(wait_ms, inventory_auto_slots_interval_ms);
	rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
				   Max(wait_ms, 0), PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	if (rc & WL_LATCH_SET)
		*due = 0;
}

/*
 * InventoryWorkerMain
 *		Entry point of the expiry worker (bgw_function_name of the dynamic
 *		worker the launcher starts); main_arg is the OID of
 *		pg_inventory.worker_database.
 *
 * Connects to that database as the bootstrap superuser, then runs a pass
 * every pg_inventory.worker_interval (see the file header), reloading the
 * configuration on SIGHUP; a commit that drops the extension here wakes it
 * early.  Exits with code 0 as soon as the extension is not installed
 * (WorkerNoExtension), and on SIGTERM with FATAL.  Errors inside a pass
 * are caught and logged (WorkerStep); it never exits because of one.
 */
void
InventoryWorkerMain(Datum main_arg)
{
	Oid			dboid = DatumGetObjectId(main_arg);
	MemoryContext pass_cxt;
	bool		installed;
	TimestampTz next_pass = 0;
	uint64		passes = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	SpinLockAcquire(&inventory_shared->mutex);
	inventory_shared->worker_latch = MyLatch;
	inventory_shared->status.worker_pid = MyProcPid;
	inventory_shared->status.worker_state = INVENTORY_WORKER_STARTING;
	inventory_shared->status.worker_started_at = GetCurrentTimestamp();
	inventory_shared->status.worker_exit = INVENTORY_WORKER_EXIT_NONE;
	SpinLockRelease(&inventory_shared->mutex);
	before_shmem_exit(WorkerDetach, (Datum) 0);

	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	/*
	 * every pass at READ COMMITTED, whatever the database's or the server's
	 * default_transaction_isolation says: purge_published (0.8) refuses an
	 * older snapshot (25001), and each statement of a pass should see what
	 * committed before it
	 */
	SetConfigOption("default_transaction_isolation", "read committed",
					PGC_SUSET, PGC_S_OVERRIDE);
	pgstat_report_appname(INVENTORY_WORKER_NAME);
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = WorkerEmitLog;

	pass_cxt = AllocSetContextCreate(TopMemoryContext,
									 "pg_inventory expiry worker pass",
									 ALLOCSET_DEFAULT_SIZES);

	/* nothing to do here without the extension: leave at once */
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	installed = OidIsValid(get_extension_oid("pg_inventory", true));
	CommitTransactionCommand();
	if (!installed)
		WorkerNoExtension(false);
	SpinLockAcquire(&inventory_shared->mutex);
	inventory_shared->status.extension_missing_reported = false;
	SpinLockRelease(&inventory_shared->mutex);
	ereport(LOG,
			(errmsg(INVENTORY_WORKER_NAME " started in database \"%s\" (interval %d ms, batch %d)",
					inventory_worker_database, inventory_worker_interval_ms,
					inventory_worker_batch_size)));

	for (;;)
	{
		int64		rows;
		int64		expired = 0;
		int64		purged = 0;
		int64		history_purged = 0;
		TimestampTz pass_at;
		WorkerStepResult result;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		MemoryContextSwitchTo(pass_cxt);
		if (GetCurrentTimestamp() < next_pass)
		{
			/* between passes: automatic slotting only */
			WorkerAutoSlots();
			MemoryContextSwitchTo(TopMemoryContext);
			MemoryContextReset(pass_cxt);
			WorkerWait(next_pass, &next_pass);
			continue;
		}
		do
		{
			result = WorkerStep(WORKER_STEP_EXPIRE, &rows);
			if (result == WORKER_STEP_NO_EXTENSION)
				WorkerNoExtension(true);
			expired += rows;
			CHECK_FOR_INTERRUPTS();
		} while (result == WORKER_STEP_DONE &&
				 rows >= inventory_worker_batch_size);

		if (WorkerStep(WORKER_STEP_PURGE, &rows) == WORKER_STEP_NO_EXTENSION)
			WorkerNoExtension(true);
		purged = rows;

		/* history retention: off (0) by default */
		if (inventory_history_retention_s > 0)
		{
			if (WorkerStep(WORKER_STEP_HISTORY, &rows) == WORKER_STEP_NO_EXTENSION)
				WorkerNoExtension(true);
			history_purged = rows;
		}

		/*
		 * the outbox's low-water mark (0.7 on): from the mark every pass,
		 * from the start every INVENTORY_LOW_WATER_FULL_EVERY passes
		 */
		if (WorkerStep(passes % INVENTORY_LOW_WATER_FULL_EVERY == 0 ?
					   WORKER_STEP_LOW_WATER_FULL : WORKER_STEP_LOW_WATER,
					   &rows) == WORKER_STEP_NO_EXTENSION)
			WorkerNoExtension(true);
		passes++;

		pass_at = GetCurrentTimestamp();
		SpinLockAcquire(&inventory_shared->mutex);
		inventory_shared->status.last_pass_at = pass_at;
		inventory_shared->status.last_pass_expired = expired;
		inventory_shared->status.last_pass_purged = purged;
		inventory_shared->status.last_pass_history_purged = history_purged;
		inventory_shared->status.total_passes++;
		inventory_shared->status.total_expired += expired;
		inventory_shared->status.total_purged += purged;
		inventory_shared->status.total_history_purged += history_purged;
		SpinLockRelease(&inventory_shared->mutex);
		WorkerReportIdle(pass_at, expired, purged, history_purged);

		WorkerAutoSlots();
		MemoryContextSwitchTo(TopMemoryContext);
		MemoryContextReset(pass_cxt);

		next_pass = TimestampTzPlusMilliseconds(pass_at,
												inventory_worker_interval_ms);
		WorkerWait(next_pass, &next_pass);
	}
}
