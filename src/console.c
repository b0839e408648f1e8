/*-------------------------------------------------------------------------
 *
 * src/console.c
 *		The DBA's console (schema 0.5 on, README "Operations", "The DBA's
 *		console"): the clock as a function (inventory.clock), the status of
 *		the launcher and the expiry worker (inventory.worker_status), and
 *		the operator audit (InventoryAudit).
 *
 * The views of the console (pending_hold, pending_hold_summary,
 * reservation_metrics, worker_status) are plain SQL in the install script;
 * they read the clock and the worker's status through the two functions
 * here.  Neither function reads a table, so both work on any schema
 * generation and need no call context.
 *
 * The audit: the operator functions that change configuration or destroy
 * or revive events (grant_tenant, revoke_tenant, set_location,
 * set_allocation_policy, set_stock_policy, set_stock_slots,
 * requeue_dead_letters, discard_dead_letters) write one row of
 * inventory.operator_audit in their own transaction, inside their call (as
 * the function owner), when they changed something.  The detail is a JSON
 * object the caller builds (InventoryJsonText quotes a string); the table
 * exists from 0.5 on, so on an older schema nothing is written.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"

#include "pg_inventory.h"
#include "statement.h"
#include "worker.h"

PG_FUNCTION_INFO_V1(inventory_clock);
PG_FUNCTION_INFO_V1(inventory_worker_status);

/*
 * inventory_clock
 *		clock() RETURNS timestamptz
 *
 * The instant pg_inventory uses (InventoryNow): pg_inventory.frozen_now
 * when set, else the server's clock at the call.  What "due" means in the
 * views and for expire_due.  No errors.
 */
Datum
inventory_clock(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(InventoryNow());
}

/* The words worker_status shows for the states (worker.h) */
static const char *
LauncherStateName(InventoryLauncherState state)
{
	switch (state)
	{
		case INVENTORY_LAUNCHER_STOPPED:
			return "stopped";
		case INVENTORY_LAUNCHER_CHECKING:
			return "checking";
		case INVENTORY_LAUNCHER_NO_DATABASE:
			return "no_database";
		case INVENTORY_LAUNCHER_WORKER_RUNNING:
			return "worker_running";
		case INVENTORY_LAUNCHER_NO_EXTENSION:
			return "no_extension";
		case INVENTORY_LAUNCHER_RETRY:
			return "retry";
	}
	return "unknown";
}

static const char *
WorkerStateName(InventoryWorkerState state)
{
	switch (state)
	{
		case INVENTORY_WORKER_STOPPED:
			return "stopped";
		case INVENTORY_WORKER_STARTING:
			return "starting";
		case INVENTORY_WORKER_IDLE:
			return "idle";
		case INVENTORY_WORKER_EXPIRING:
			return "expiring";
		case INVENTORY_WORKER_PURGING:
			return "purging";
		case INVENTORY_WORKER_PURGING_HISTORY:
			return "purging_history";
		case INVENTORY_WORKER_ADVANCING:
			return "advancing";
		case INVENTORY_WORKER_SLOTTING:
			return "slotting";
	}
	return "unknown";
}

/* NULL for a worker that runs, or stopped before it could say why */
static const char *
WorkerExitName(InventoryWorkerExit exit)
{
	switch (exit)
	{
		case INVENTORY_WORKER_EXIT_NONE:
			return NULL;
		case INVENTORY_WORKER_EXIT_NO_EXTENSION:
			return "no_extension";
		case INVENTORY_WORKER_EXIT_EXTENSION_DROPPED:
			return "extension_dropped";
		case INVENTORY_WORKER_EXIT_TERMINATED:
			return "terminated";
	}
	return "unknown";
}

#define WORKER_STATUS_COLUMNS 22

/* A column of the status row: a text, or NULL */
static void
SetText(Datum *values, bool *nulls, int col, const char *s)
{
	nulls[col] = (s == NULL);
	values[col] = s == NULL ? (Datum) 0 : CStringGetTextDatum(s);
}

/* A pid or a time: 0 means "none", shown as NULL */
static void
SetPid(Datum *values, bool *nulls, int col, int pid)
{
	nulls[col] = (pid == 0);
	values[col] = Int32GetDatum(pid);
}

static void
SetTime(Datum *values, bool *nulls, int col, TimestampTz t)
{
	nulls[col] = (t == 0);
	values[col] = TimestampTzGetDatum(t);
}

/*
 * inventory_worker_status
 *		worker_status() RETURNS TABLE(enabled boolean, database text,
 *			launcher_state text, launcher_pid integer, launcher_checks integer,
 *			launcher_next_check timestamptz, worker_state text,
 *			worker_pid integer, worker_started_at timestamptz,
 *			worker_exit text, last_pass_at timestamptz,
 *			last_pass_expired bigint, last_pass_purged bigint,
 *			last_pass_history_purged bigint, total_passes bigint,
 *			total_expired bigint, total_purged bigint,
 *			total_history_purged bigint, total_errors bigint, last_error_at timestamptz,
 *			last_error_sqlstate text, last_error_message text)
 *
 * One row: the status the launcher and the expiry worker keep in shared
 * memory (worker.h), copied at one instant.  On a server that does not
 * preload pg_inventory with a pg_inventory.worker_database, enabled is
 * false, the states stopped, the counts 0 and the rest NULL.  Pids and
 * times that are 0 in the status (not running, never happened) are NULL.
 * Counts run from the server's start.  No errors.
 */
Datum
inventory_worker_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InventoryWorkerStatus s;
	Datum		values[WORKER_STATUS_COLUMNS];
	bool		nulls[WORKER_STATUS_COLUMNS];
	bool		enabled;

	InitMaterializedSRF(fcinfo, 0);
	enabled = InventoryWorkerGetStatus(&s);
	memset(nulls, 0, sizeof(nulls));

	values[0] = BoolGetDatum(enabled);
	SetText(values, nulls, 1,
			enabled && inventory_worker_database != NULL &&
			inventory_worker_database[0] != '\0' ?
			inventory_worker_database : NULL);
	SetText(values, nulls, 2, LauncherStateName(s.launcher_state));
	SetPid(values, nulls, 3, s.launcher_pid);
	values[4] = Int32GetDatum(s.launcher_checks);
	SetTime(values, nulls, 5, s.launcher_next_check);
	SetText(values, nulls, 6, WorkerStateName(s.worker_state));
	SetPid(values, nulls, 7, s.worker_pid);
	SetTime(values, nulls, 8, s.worker_started_at);
	SetText(values, nulls, 9, WorkerExitName(s.worker_exit));
	SetTime(values, nulls, 10, s.last_pass_at);
	values[11] = Int64GetDatum(s.last_pass_expired);
	values[12] = Int64GetDatum(s.last_pass_purged);
	values[13] = Int64GetDatum(s.last_pass_history_purged);
	values[14] = Int64GetDatum(s.total_passes);
	values[15] = Int64GetDatum(s.total_expired);
	values[16] = Int64GetDatum(s.total_purged);
	values[17] = Int64GetDatum(s.total_history_purged);
	values[18] = Int64GetDatum(s.total_errors);
	SetTime(values, nulls, 19, s.last_error_at);
	SetText(values, nulls, 20,
			s.last_error_sqlstate[0] != '\0' ? s.last_error_sqlstate : NULL);
	SetText(values, nulls, 21,
			s.last_error_message[0] != '\0' ? s.last_error_message : NULL);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/*
 * InventoryJsonText
 *		s as a JSON string literal (quoted, escaped), or null for NULL: for
 *		the detail of an audit row.
 */
char *
InventoryJsonText(const char *s)
{
	StringInfoData buf;

	if (s == NULL)
		return pstrdup("null");
	initStringInfo(&buf);
	escape_json(&buf, s);
	return buf.data;
}

/*
 * $1 clock, $2 actor, $3 action, $4 tenant, $5 detail (a JSON object),
 * $6 reason
 */
static InventoryStatement insert_audit = {
	"write operator audit",
	"INSERT INTO inventory.operator_audit (at, actor, action, tenant, detail, reason) "
	"VALUES ($1, $2, $3, $4, $5::jsonb, $6)",
	6, {TIMESTAMPTZOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID}
};

/*
 * InventoryAudit
 *		Inside a call (as the function owner): writes one row of
 *		inventory.operator_audit, in the caller's transaction, saying that
 *		call->actor did action (the SQL function's name) to tenant (NULL:
 *		none, or events of several), with detail (a JSON object: what, ids,
 *		counts, old and new values) and reason (NULL: none given).  At the
 *		pg_inventory clock.  Does nothing on a schema before 0.5, which has
 *		no audit table.  Callers write a row only when they changed
 *		something.
 */
void
InventoryAudit(const InventoryCall *call, const char *action,
			   const char *tenant, const char *detail, const char *reason)
{
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};

	if (!call->located)
		return;
	values[0] = TimestampTzGetDatum(InventoryNow());
	values[1] = CStringGetTextDatum(call->actor);
	values[2] = CStringGetTextDatum(action);
	if (tenant != NULL)
		values[3] = CStringGetTextDatum(tenant);
	else
		nulls[3] = 'n';
	values[4] = CStringGetTextDatum(detail);
	if (reason != NULL)
		values[5] = CStringGetTextDatum(reason);
	else
		nulls[5] = 'n';
	InventoryRun(&insert_audit, values, nulls, SPI_OK_INSERT);
}
