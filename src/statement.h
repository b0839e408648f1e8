/*-------------------------------------------------------------------------
 *
 * src/statement.h
 *		The one small executor of pg_inventory: a named SQL statement,
 *		prepared once per backend and kept (SPI_keepplan), run through SPI.
 *
 * Each C file owns its statements, declared beside the code that runs them:
 *
 *		static InventoryStatement claim_key = {
 *			"claim request key",
 *			"INSERT INTO inventory.reservation ... RETURNING r.id",
 *			4, {TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID}
 *		};
 *		...
 *		n = InventoryRun(&claim_key, values, NULL, SPI_OK_INSERT_RETURNING);
 *
 * A statement on a table whose statistics can mislead the planner badly
 * sets by_index (after the plan, NULL): the outbox is empty when a relay's
 * backend first plans its claim (after a purge, on a new install) and
 * grows by thousands of rows before the next ANALYZE; the kept generic
 * plan then scans it whole, with a correlated scan per row.  The same for
 * the reservations' rings (0.9): a ring is empty, and may be analyzed
 * empty, on a new install and after each purge, so the statements that
 * read or change reservations by key or id set by_index too (and the
 * foreign-key checks their inserts fire are planned under it; test
 * 330_ring_plans).  With by_index
 * the statement is planned (and replanned) and run with enable_seqscan
 * off, so it keeps to its indexes whatever the statistics say, and with
 * jit off (a scan without an index then costs 1e10, which would make
 * every run compile its plan).
 *
 * A statement that must fire no trigger sets without_triggers (after
 * by_index): it runs with session_replication_role = replica, set like
 * by_index's settings and undone the same way (the outbox's rings move
 * events whose foreign key was checked when they were written).  The
 * setting needs a superuser, which the functions run as (the extension's
 * owner); PostgreSQL drops the backend's cached plans at each change, so
 * such a statement must be rare.
 *
 * Every error raised while a statement runs (a constraint, a lock timeout,
 * a serialization failure) carries the CONTEXT line
 * `pg_inventory statement "claim request key"` instead of the statement's
 * text (SPI's `SQL statement "..."` line is taken out), and an unexpected
 * SPI result names the statement too.
 *
 *-------------------------------------------------------------------------
 */
#ifndef INVENTORY_STATEMENT_H
#define INVENTORY_STATEMENT_H

#include "postgres.h"

#include "executor/spi.h"

#define INVENTORY_STATEMENT_MAX_ARGS 10

typedef struct InventoryStatement
{
	const char *name;			/* what errors call it */
	const char *sql;			/* every object schema-qualified */
	int			nargs;
	Oid			argtypes[INVENTORY_STATEMENT_MAX_ARGS];
	SPIPlanPtr	plan;			/* prepared on first use, then kept */
	bool		by_index;		/* planned and run with enable_seqscan and
								 * jit off */
	bool		without_triggers;	/* run with session_replication_role =
									 * replica: no trigger fires */
} InventoryStatement;

extern uint64 InventoryRun(InventoryStatement *stmt, Datum *values,
						   const char *nulls, int expected_rc);
extern uint64 InventoryRunReadOnly(InventoryStatement *stmt, Datum *values,
								   const char *nulls);
extern uint64 InventoryRunLatest(InventoryStatement *stmt, Datum *values,
								 const char *nulls);

/* Column col (from 1) of row row of the last result, as a Datum / C string */
extern Datum InventoryResultDatum(uint64 row, int col, bool *isnull);
extern char *InventoryResultText(uint64 row, int col);
extern int64 InventoryResultInt64(uint64 row, int col);

#endif							/* INVENTORY_STATEMENT_H */
