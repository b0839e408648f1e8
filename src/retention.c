/*-------------------------------------------------------------------------
 *
 * src/retention.c
 *		Retention of history (schema 0.5 on, README "Retention"):
 *		purge_history, which removes finished reservations with their
 *		lines, transitions and published events (optionally keeping one
 *		document of each in reservation_archive), and archive_ledger,
 *		which moves old ledger records into stock_ledger_archive.
 *		purge_published (outbox.c) is the third retention function.
 *
 * purge_history runs two statements.  The first picks the oldest finished
 * reservations past the cut-off none of whose events is unpublished or
 * dead-lettered, and locks them FOR UPDATE SKIP LOCKED: a reservation
 * another transaction holds (a compensate, a replayed confirm, another
 * purge) is skipped, never waited for.  From then on nobody can change
 * them or add an event to them (every writer of a reservation's state,
 * lines, transitions and events holds its row lock: reservation.c), so the
 * second statement, whose snapshot is taken after the locks, sees all they
 * will ever have.  It checks each again, locks their events SKIP LOCKED
 * (a reservation with an event another transaction holds, such as
 * purge_published deleting it, is left for a later call), archives them
 * when asked, adds the units of the confirmed ones to purged_confirmed, and
 * deletes their events, transitions, lines and rows.
 *
 * Why purged_confirmed: a confirmed reservation's units stay in the SKU's
 * consumed counter for good, and check_invariants holds consumed equal to
 * the units of confirmed reservations; removing the reservation must not
 * break that, so its units are carried per (tenant, sku, location) and the
 * check adds them (invariants.c).  Only purge_history writes that table,
 * in (tenant, sku, location) order (lock order 4, pg_inventory.h): two
 * purges may wait there for each other's commit, never deadlock, and no
 * other call ever waits for a purge.
 *
 * archive_ledger moves records in one statement (DELETE ... RETURNING
 * into INSERT), so every snapshot sees each record in exactly one of the
 * two tables: check_invariants, which sums both in one statement, stays
 * exact, and restock and adjust, which look a key up in both in one
 * statement (ledger.c), still replay a moved record.  Records are moved
 * only when older than a day, so no call still in flight can be writing
 * the same key (which would otherwise find the key free in the ledger).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "pg_inventory.h"
#include "statement.h"

PG_FUNCTION_INFO_V1(inventory_purge_history);
PG_FUNCTION_INFO_V1(inventory_archive_ledger);

/* Most reservations or records one call removes or moves */
#define RETENTION_MAX_ROWS 1000000

/*
 * Reservation r is finished ("not pending": the table checks the states)
 * before cutoff, and none of its events is unpublished or dead-lettered.
 * OFFSET 0 keeps the event check a probe of outbox_reservation per
 * reservation (a subplan, not an anti join over every unpublished event),
 * so its cost does not grow with the outbox or a relay's backlog.
 */
#define FINISHED_BEFORE(cutoff) \
	"r.state <> 'pending' AND r.updated_at < " cutoff " " \
	"AND NOT EXISTS (SELECT 1 FROM inventory.outbox o " \
	"WHERE o.reservation_id = r.id AND o.published_at IS NULL OFFSET 0)"

/*
 * The ids of up to $2 finished reservations whose last change is before
 * $1 and whose events are all published, oldest first, locked (NULL: none);
 * those another transaction holds are skipped.
 */
static InventoryStatement pick_finished = {
	"pick finished reservations",
	"SELECT array_agg(c.id) FROM ("
	"SELECT r.id FROM inventory.reservation r WHERE " FINISHED_BEFORE("$1")
	" ORDER BY r.updated_at, r.id LIMIT $2 FOR UPDATE OF r SKIP LOCKED) c",
	2, {TIMESTAMPTZOID, INT4OID}
};

/*
 * Of the locked reservations $1: those still finished before $2 with only
 * published events, each of which this statement could lock (k), are
 * archived when $3 (archived_at $4), their confirmed units added to
 * purged_confirmed, and deleted with their events, transitions and lines.
 * The row count is the number of reservations deleted.
 */
static InventoryStatement purge_finished = {
	"purge finished reservations",
	"WITH r AS MATERIALIZED (SELECT r.id FROM inventory.reservation r "
	"WHERE r.id = ANY ($1) AND " FINISHED_BEFORE("$2") "), "
	"e AS MATERIALIZED (SELECT o.id FROM inventory.outbox o "
	"WHERE o.reservation_id IN (SELECT r.id FROM r) FOR UPDATE OF o SKIP LOCKED), "
	"k AS MATERIALIZED (SELECT x.id, x.state FROM inventory.reservation x "
	"JOIN r ON r.id = x.id WHERE NOT EXISTS (SELECT 1 FROM inventory.outbox o "
	"WHERE o.reservation_id = x.id AND NOT EXISTS (SELECT 1 FROM e WHERE e.id = o.id))), "
	"archived AS (INSERT INTO inventory.reservation_archive (reservation_id, tenant, "
	"request_key, state, finished_at, document, archived_at) "
	"SELECT x.id, x.tenant, x.request_key, x.state, x.updated_at, "
	"to_jsonb(x) || jsonb_build_object("
	"'lines', COALESCE((SELECT jsonb_agg(to_jsonb(l) - 'reservation_id' - 'tenant' "
	"ORDER BY l.sku, l.location NULLS FIRST) FROM inventory.reservation_line l "
	"WHERE l.reservation_id = x.id), '[]'::jsonb), "
	"'transitions', COALESCE((SELECT jsonb_agg(to_jsonb(t) - 'reservation_id' "
	"ORDER BY t.version) FROM inventory.reservation_transition t "
	"WHERE t.reservation_id = x.id), '[]'::jsonb)), $4 "
	"FROM inventory.reservation x JOIN k ON k.id = x.id WHERE $3), "
	"carried AS (INSERT INTO inventory.purged_confirmed AS p "
	"(tenant, sku, location, quantity, updated_at) "
	"SELECT l.tenant, l.sku, l.location, sum(l.quantity), $4 "
	"FROM inventory.reservation_line l JOIN k ON k.id = l.reservation_id "
	"WHERE k.state = 'confirmed' GROUP BY l.tenant, l.sku, l.location "
	"ORDER BY l.tenant, l.sku, l.location "
	"ON CONFLICT (tenant, sku, location) DO UPDATE "
	"SET quantity = p.quantity + excluded.quantity, updated_at = excluded.updated_at), "
	"gone_events AS (DELETE FROM inventory.outbox o USING k "
	"WHERE o.reservation_id = k.id), "
	"gone_log AS (DELETE FROM inventory.reservation_transition t USING k "
	"WHERE t.reservation_id = k.id), "
	"gone_lines AS (DELETE FROM inventory.reservation_line l USING k "
	"WHERE l.reservation_id = k.id) "
	"DELETE FROM inventory.reservation x USING k WHERE x.id = k.id",
	4, {INT8ARRAYOID, TIMESTAMPTZOID, BOOLOID, TIMESTAMPTZOID}
};

/*
 * Moves up to $2 ledger records made before $1, lowest id first, into the
 * archive; records another transaction holds are skipped.
 */
static InventoryStatement move_ledger = {
	"archive ledger records",
	"WITH g AS MATERIALIZED (SELECT g.id FROM inventory.stock_ledger g "
	"WHERE g.created_at < $1 ORDER BY g.id LIMIT $2 FOR UPDATE SKIP LOCKED), "
	"d AS (DELETE FROM inventory.stock_ledger x USING g WHERE x.id = g.id "
	"RETURNING x.id, x.tenant, x.sku, x.request_key, x.kind, x.delta, x.reason, "
	"x.available_after, x.actor, x.created_at, x.location) "
	"INSERT INTO inventory.stock_ledger_archive (id, tenant, sku, request_key, "
	"kind, delta, reason, available_after, actor, created_at, location) "
	"SELECT d.id, d.tenant, d.sku, d.request_key, d.kind, d.delta, d.reason, "
	"d.available_after, d.actor, d.created_at, d.location FROM d",
	2, {TIMESTAMPTZOID, INT4OID}
};

/* now - older_than, as a timestamptz Datum */
static Datum
Cutoff(TimestampTz now, Interval *older_than)
{
	return DirectFunctionCall2(timestamptz_mi_interval, TimestampTzGetDatum(now),
							   IntervalPGetDatum(older_than));
}

/*
 * inventory_purge_history
 *		purge_history(older_than interval DEFAULT '90 days',
 *					  max_rows integer DEFAULT 10000,
 *					  archive boolean DEFAULT false) RETURNS integer
 *
 * Retention: deletes at most max_rows (1 to 1000000) finished reservations
 * (every state but pending) whose last change (updated_at) is more than
 * older_than (0 to 10 years) before the pg_inventory clock and none of
 * whose events is unpublished or dead-lettered, oldest first, with their
 * lines, transitions and published events; with archive, each is first
 * kept as one document in reservation_archive.  The units of confirmed
 * ones are added to purged_confirmed.  Never waits on a reservation or an
 * event another transaction holds: it skips them.  Returns how many
 * reservations it removed.  Errors: 22023 bad argument, 0A000 schema
 * before 0.5.
 */
Datum
inventory_purge_history(PG_FUNCTION_ARGS)
{
	Interval   *older_than = InventoryIntervalArg(fcinfo, 0, "older_than", "0",
												  true, "10 years");
	int32		max_rows = InventoryIntArg(fcinfo, 1, "max_rows", 1,
										   RETENTION_MAX_ROWS);
	bool		archive;
	InventoryCall call;
	TimestampTz now;
	Datum		values[4];
	bool		isnull;
	int32		removed = 0;

	InventoryRequireArg(fcinfo, 2, "archive");
	archive = PG_GETARG_BOOL(2);

	InventoryBeginCall(fcinfo, &call, NULL);
	InventoryRequireLocated(&call, "inventory.purge_history");
	now = InventoryNow();
	values[0] = Cutoff(now, older_than);
	values[1] = Int32GetDatum(max_rows);
	InventoryRun(&pick_finished, values, NULL, SPI_OK_SELECT);
	values[0] = InventoryResultDatum(0, 1, &isnull);
	if (!isnull)
	{
		values[1] = Cutoff(now, older_than);
		values[2] = BoolGetDatum(archive);
		values[3] = TimestampTzGetDatum(now);
		removed = (int32) InventoryRun(&purge_finished, values, NULL,
									   SPI_OK_DELETE);
	}
	InventoryEndCall(&call);
	PG_RETURN_INT32(removed);
}

/*
 * inventory_archive_ledger
 *		archive_ledger(older_than interval DEFAULT '365 days',
 *					   max_rows integer DEFAULT 10000) RETURNS integer
 *
 * Moves at most max_rows (1 to 1000000) ledger records made more than
 * older_than (1 day to 10 years) before the pg_inventory clock, lowest id
 * first, from stock_ledger into stock_ledger_archive, unchanged.  Skips
 * records another transaction holds.  Returns how many it moved.
 * Errors: 22023 bad argument, 0A000 schema before 0.5.
 */
Datum
inventory_archive_ledger(PG_FUNCTION_ARGS)
{
	Interval   *older_than = InventoryIntervalArg(fcinfo, 0, "older_than",
												  "1 day", true, "10 years");
	int32		max_rows = InventoryIntArg(fcinfo, 1, "max_rows", 1,
										   RETENTION_MAX_ROWS);
	InventoryCall call;
	Datum		values[2];
	int32		moved;

	InventoryBeginCall(fcinfo, &call, NULL);
	InventoryRequireLocated(&call, "inventory.archive_ledger");
	values[0] = Cutoff(InventoryNow(), older_than);
	values[1] = Int32GetDatum(max_rows);
	moved = (int32) InventoryRun(&move_ledger, values, NULL, SPI_OK_INSERT);
	InventoryEndCall(&call);
	PG_RETURN_INT32(moved);
}
