/*-------------------------------------------------------------------------
 *
 * src/statement.c
 *		The executor of pg_inventory's named statements (see statement.h).
 *
 * A statement is prepared on its first use in a backend with a generic plan
 * and kept with SPI_keepplan, so a call plans nothing.  An error a
 * statement raises keeps every CONTEXT line but SPI's copy of the
 * statement's text (ForgetStatementText): the caller sees the statement's
 * name instead.  The functions run
 * with search_path pinned to pg_catalog, pg_temp (the SET clause of every
 * function), and every statement writes the objects it uses
 * schema-qualified, so a caller's search_path can never redirect them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"

#include "statement.h"

/* Adds the statement's name to the CONTEXT of any error it raises. */
static void
StatementErrorContext(void *arg)
{
	errcontext("pg_inventory statement \"%s\"",
			   ((InventoryStatement *) arg)->name);
}

/* Prepares and keeps the statement's plan on first use. */
static SPIPlanPtr
StatementPlan(InventoryStatement *stmt)
{
	if (stmt->plan == NULL)
	{
		SPIPlanPtr	plan;

		/*
		 * A generic plan from the start: with custom plans the plan cache
		 * would plan the statement again on every call while it weighs them.
		 */
		plan = SPI_prepare_cursor(stmt->sql, stmt->nargs, stmt->argtypes,
								  CURSOR_OPT_GENERIC_PLAN);
		if (plan == NULL)
			elog(ERROR, "pg_inventory: could not prepare statement \"%s\": %s",
				 stmt->name, SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "pg_inventory: could not keep the plan of statement \"%s\"",
				 stmt->name);
		stmt->plan = plan;
	}
	return stmt->plan;
}

/*
 * ForgetStatementText
 *		Takes the text of stmt out of an error it raised: SPI adds the whole
 *		statement as a CONTEXT line `SQL statement "..."` (or, for an error
 *		with a position, as the internal QUERY), a long internal text that
 *		means nothing to the caller; the CONTEXT line
 *		`pg_inventory statement "name"` says which statement it was.
 */
static void
ForgetStatementText(ErrorData *edata, const InventoryStatement *stmt)
{
	if (edata->internalquery != NULL &&
		strcmp(edata->internalquery, stmt->sql) == 0)
	{
		pfree(edata->internalquery);
		edata->internalquery = NULL;
		edata->internalpos = 0;
	}
	if (edata->context != NULL)
	{
		char	   *line = psprintf("SQL statement \"%s\"", stmt->sql);
		char	   *at = strstr(edata->context, line);

		if (at != NULL)
		{
			size_t		len = strlen(line);
			StringInfoData buf;

			/* the line and the line break that separates it from the next */
			if (at[len] == '\n')
				len++;
			else if (at > edata->context && at[-1] == '\n')
				at--, len++;
			initStringInfo(&buf);
			appendBinaryStringInfo(&buf, edata->context, at - edata->context);
			appendStringInfoString(&buf, at + len);
			edata->context = buf.data;
		}
	}
}

static uint64
Run(InventoryStatement *stmt, Datum *values, const char *nulls,
	bool read_only, bool latest, int expected_rc)
{
	ErrorContextCallback context;
	MemoryContext cxt = CurrentMemoryContext;
	int			rc = 0;

	volatile int guc_level = 0;

	context.callback = StatementErrorContext;
	context.arg = stmt;
	context.previous = error_context_stack;
	error_context_stack = &context;
	if (stmt->by_index || stmt->without_triggers)
		/* undone below, or by the abort of the (sub)transaction on an error */
		guc_level = NewGUCNestLevel();
	if (stmt->without_triggers)
		(void) set_config_option("session_replication_role", "replica",
								 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, 0, false);
	if (stmt->by_index)
	{
		(void) set_config_option("enable_seqscan", "off", PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
		/*
		 * and without JIT: a scan that has no index (the one-row sequence
		 * of the low-water mark) costs disable_cost (1e10) with seq scans
		 * off, far above jit_above_cost, so with jit on (PostgreSQL's
		 * default) every claim compiled its plan, hundreds of ms a call
		 */
		(void) set_config_option("jit", "off", PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	}
	PG_TRY();
	{
		if (latest)
			rc = SPI_execute_snapshot(StatementPlan(stmt), values, nulls,
									  GetLatestSnapshot(), InvalidSnapshot,
									  false, false, 0);
		else
			rc = SPI_execute_plan(StatementPlan(stmt), values, nulls,
								  read_only, 0);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/* the same error, without the statement's text */
		error_context_stack = context.previous;
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ForgetStatementText(edata, stmt);
		ReThrowError(edata);
	}
	PG_END_TRY();
	error_context_stack = context.previous;
	if (stmt->by_index || stmt->without_triggers)
		AtEOXact_GUC(true, guc_level);
	if (rc != expected_rc)
		elog(ERROR, "pg_inventory: statement \"%s\" returned %s, expected %s",
			 stmt->name, SPI_result_code_string(rc),
			 SPI_result_code_string(expected_rc));
	return SPI_processed;
}

/*
 * InventoryRun
 *		Runs stmt with the parameters values (one per argument; nulls as for
 *		SPI: ' ' or 'n' per value, or NULL when none is null).
 *
 * expected_rc: the exact SPI_OK_* code the statement returns; anything else
 * is a defect and raises XX000 naming the statement.  Returns SPI_processed;
 * the rows are in SPI_tuptable until the next statement runs.
 */
uint64
InventoryRun(InventoryStatement *stmt, Datum *values, const char *nulls,
			 int expected_rc)
{
	return Run(stmt, values, nulls, false, false, expected_rc);
}

/*
 * InventoryRunReadOnly
 *		Runs a SELECT statement read-only (lookup, check_invariants): it sees
 *		the snapshot of the calling query and cannot write.
 */
uint64
InventoryRunReadOnly(InventoryStatement *stmt, Datum *values,
					 const char *nulls)
{
	return Run(stmt, values, nulls, true, false, SPI_OK_SELECT);
}

/*
 * InventoryRunLatest
 *		Runs a SELECT statement on the latest committed data, whatever the
 *		caller's isolation level or statement snapshot: for the tenant
 *		grants, which, like privileges, take effect for the next call as
 *		soon as their change commits.
 */
uint64
InventoryRunLatest(InventoryStatement *stmt, Datum *values, const char *nulls)
{
	return Run(stmt, values, nulls, false, true, SPI_OK_SELECT);
}

/* Column col (from 1) of row row of the last statement's result. */
Datum
InventoryResultDatum(uint64 row, int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col,
						 isnull);
}

/* The same as a palloc'd C string in the column's output form, NULL if null. */
char *
InventoryResultText(uint64 row, int col)
{
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
}

/* The same for a bigint column that is never null. */
int64
InventoryResultInt64(uint64 row, int col)
{
	bool		isnull;
	Datum		d = InventoryResultDatum(row, col, &isnull);

	if (isnull)
		elog(ERROR, "pg_inventory: column %d of the result is null", col);
	return DatumGetInt64(d);
}
