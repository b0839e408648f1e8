/*-------------------------------------------------------------------------
 *
 * src/worker.c
 *		The maintenance worker: a background worker that calls
 *		inventory.expire_due every pg_inventory.worker_interval, so units come
 *		back within about that long after a reservation expires, and applies
 *		the outbox retention.
 *
 * Started only when pg_inventory is in shared_preload_libraries and
 * pg_inventory.worker_database names a database.  Each batch of
 * pg_inventory.worker_batch_size reservations is its own transaction; it
 * repeats while batches come back full.  Once per pass it also deletes up
 * to 10000 outbox events published more than pg_inventory.outbox_retention
 * ago (purge_published, version 0.2 on).  It connects as the bootstrap
 * superuser.  An error ends the process; the postmaster starts it again
 * after 5 seconds.  Until the extension is created in the database the
 * worker does nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "pg_inventory.h"

/* Registers the worker; called from _PG_init while preloading. */
void
InventoryRegisterWorker(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_inventory");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "InventoryWorkerMain");
	snprintf(worker.bgw_name, BGW_MAXLEN, "pg_inventory expiry worker");
	snprintf(worker.bgw_type, BGW_MAXLEN, "pg_inventory expiry worker");
	RegisterBackgroundWorker(&worker);
}

/*
 * WorkerCall
 *		Runs "SELECT <sql>" with one integer-typed or interval-typed argument
 *		through SPI and returns its integer result.
 */
static int
WorkerCall(const char *sql, Oid argtype, Datum arg)
{
	bool		isnull;
	int			result;

	pgstat_report_activity(STATE_RUNNING, sql);
	if (SPI_execute_with_args(sql, 1, &argtype, &arg, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "pg_inventory worker: \"%s\" failed", sql);
	result = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1, &isnull));
	return isnull ? 0 : result;
}

/*
 * MaintenanceBatch
 *		One transaction: expire_due(batch) if the extension exists, and with
 *		purge, purge_published(pg_inventory.outbox_retention, batch) if the
 *		installed version has it (0.2 and later).  Returns how many
 *		reservations it expired.
 */
static int
MaintenanceBatch(bool purge)
{
	int			expired = 0;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (OidIsValid(get_extension_oid("pg_inventory", true)))
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "pg_inventory worker: SPI_connect failed");
		expired = WorkerCall("SELECT inventory.expire_due($1)", INT4OID,
							 Int32GetDatum(inventory_worker_batch_size));
		if (purge &&
			SPI_execute("SELECT 1 WHERE pg_catalog.to_regprocedure("
						"'inventory.purge_published(interval, integer)') IS NOT NULL",
						true, 1) == SPI_OK_SELECT && SPI_processed == 1)
		{
			Interval	retention;

			memset(&retention, 0, sizeof(retention));
			retention.time = (int64) inventory_outbox_retention_s * USECS_PER_SEC;
			(void) WorkerCall("SELECT inventory.purge_published($1, 10000)",
							  INTERVALOID, IntervalPGetDatum(&retention));
		}
		SPI_finish();
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
	return expired;
}

/* Entry point of the worker process. */
void
InventoryWorkerMain(Datum main_arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(inventory_worker_database, NULL, 0);
	pgstat_report_appname("pg_inventory expiry worker");
	elog(LOG, "pg_inventory expiry worker started in database \"%s\" (interval %d ms, batch %d)",
		 inventory_worker_database, inventory_worker_interval_ms,
		 inventory_worker_batch_size);

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (MaintenanceBatch(true) >= inventory_worker_batch_size)
		{
			while (MaintenanceBatch(false) >= inventory_worker_batch_size)
				CHECK_FOR_INTERRUPTS();
		}

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 inventory_worker_interval_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
