/*-------------------------------------------------------------------------
 *
 * src/level.c
 *		Stock levels per (sku, location), schema 0.5 on (README "Levels and
 *		stock versions").
 *
 * The level of a SKU at a location follows from its sellable units
 * (greatest(available - safety_stock, 0), available summed over the
 * location's slots): 'out_of_stock' when sellable is 0, 'low' when
 * low_threshold is set and sellable <= low_threshold, else 'in_stock'.
 * Every change of available (restock, adjust, set_stock_policy, and the
 * reservation paths) calls InventoryCheckLevels afterwards, in the same
 * transaction, for the (tenant, sku, location) it changed.  A crossing is
 * written to the outbox as a level event, with stock_location.version
 * bumped:
 *
 *	new level out_of_stock			stock.out_of_stock
 *	old level out_of_stock			stock.back_in_stock
 *	in_stock -> low					stock.low
 *	low -> in_stock, old NULL		no event (the level is only stored)
 *
 * Exactness: a caller that holds every slot of the (sku, location) (one
 * slot, or restock/adjust/set_stock_policy, which lock them all) reads the
 * exact sum, so each crossing is reported once, in the transaction that
 * made it.  With several slots the fast path of a reservation holds one
 * slot only, and a concurrent change of another slot may be seen only by
 * the next change (README says so).  Even then no crossing is reported
 * twice: stock_location rows are written only where the level differs
 * (IS DISTINCT FROM in the UPDATE's WHERE, re-checked on the newest row
 * version after a wait), and the previous level of an event is read from
 * the row locked just before.
 *
 * Lock order: stock_location rows come after the slots (pg_inventory.h);
 * they are locked (FOR NO KEY UPDATE, which does not block the KEY SHARE
 * locks of foreign key checks) only where the level changes, in (tenant,
 * sku, location) order.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"

#include "pg_inventory.h"
#include "statement.h"
#include "storage.h"

/*
 * The level of a sellable figure s with low threshold t, as SQL (used twice
 * in the statement below)
 */
#define LEVEL_OF(s, t) \
	"CASE WHEN " s " <= 0 THEN 'out_of_stock' " \
	"WHEN " t " IS NOT NULL AND " s " <= " t " THEN 'low' " \
	"ELSE 'in_stock' END"

/* Units available at a stock_location row sl (its slots summed, numeric) */
#define AVAILABLE_AT \
	"COALESCE((SELECT sum(s.available) FROM inventory.stock_slot s " \
	"WHERE s.tenant = sl.tenant AND s.sku = sl.sku " \
	"AND s.location = sl.location), 0)"

/*
 * Recomputes the levels of the (tenant, sku, location) triples $1, $2, $3
 * (text[], duplicates allowed, unknown triples ignored) and writes the
 * crossings; $4 clock.
 *
 * seen: the level from this statement's snapshot, kept where it differs
 * from the stored one (the common case, no change, ends here and locks
 * nothing); locked: those rows, locked in key order, at their newest
 * version (policy and previous level); calc: the level again with that
 * policy; u: the rows whose level still differs, version + 1 where an
 * event is written; ev: one event id per event.  (0.6 adds g between u
 * and ev: check_levels_guarded.)
 */
#define CHECK_LEVELS_HEAD \
	"WITH w AS (SELECT DISTINCT u.tenant, u.sku, u.location " \
	"FROM unnest($1, $2, $3) AS u(tenant, sku, location)), " \
	"seen AS MATERIALIZED (SELECT sl.tenant, sl.sku, sl.location " \
	"FROM inventory.stock_location sl " \
	"JOIN w ON sl.tenant = w.tenant AND sl.sku = w.sku AND sl.location = w.location " \
	"WHERE sl.level IS DISTINCT FROM (" \
	LEVEL_OF("(" AVAILABLE_AT " - sl.safety_stock)", "sl.low_threshold") ")), " \
	"locked AS MATERIALIZED (SELECT sl.tenant, sl.sku, sl.location, " \
	"sl.level AS old_level, sl.safety_stock, sl.low_threshold, " \
	AVAILABLE_AT " AS available " \
	"FROM inventory.stock_location sl " \
	"JOIN seen ON sl.tenant = seen.tenant AND sl.sku = seen.sku " \
	"AND sl.location = seen.location " \
	"ORDER BY sl.tenant, sl.sku, sl.location FOR NO KEY UPDATE OF sl), " \
	"calc AS MATERIALIZED (SELECT l.tenant, l.sku, l.location, l.old_level, " \
	"l.available, greatest(l.available - l.safety_stock, 0) AS sellable, " \
	LEVEL_OF("(l.available - l.safety_stock)", "l.low_threshold") " AS level " \
	"FROM locked l), " \
	"typed AS MATERIALIZED (SELECT c.*, CASE " \
	"WHEN c.old_level IS NULL THEN NULL " \
	"WHEN c.level = 'out_of_stock' THEN 'stock.out_of_stock' " \
	"WHEN c.old_level = 'out_of_stock' THEN 'stock.back_in_stock' " \
	"WHEN c.old_level = 'in_stock' AND c.level = 'low' THEN 'stock.low' " \
	"END AS event_type FROM calc c WHERE c.old_level IS DISTINCT FROM c.level), " \
	"u AS (UPDATE inventory.stock_location sl SET level = t.level, " \
	"version = sl.version + CASE WHEN t.event_type IS NULL THEN 0 ELSE 1 END " \
	"FROM typed t WHERE sl.tenant = t.tenant AND sl.sku = t.sku " \
	"AND sl.location = t.location AND sl.level IS DISTINCT FROM t.level " \
	"RETURNING sl.tenant::text AS tenant, sl.sku::text AS sku, " \
	"sl.location::text AS location, sl.version, t.old_level, t.level, " \
	"t.available, t.sellable, t.event_type, sl.safety_stock, sl.low_threshold), "

#define CHECK_LEVELS_TAIL \
	"ev AS MATERIALIZED (SELECT u.*, gen_random_uuid() AS event_id FROM u " \
	"WHERE u.event_type IS NOT NULL) " \
	"INSERT INTO inventory.outbox " \
	"(event_id, event_type, tenant, reservation_id, payload, created_at) " \
	"SELECT ev.event_id, ev.event_type, ev.tenant, NULL, " \
	"jsonb_build_object('event_id', ev.event_id, 'event_type', ev.event_type, " \
	"'tenant', ev.tenant, 'sku', ev.sku, 'location', ev.location, " \
	"'level', ev.level, 'previous_level', ev.old_level, " \
	"'sellable', ev.sellable, 'available', ev.available, " \
	"'version', ev.version, " \
	"'occurred_at', to_char($4 AT TIME ZONE 'UTC', " \
	"'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')), $4 " \
	"FROM ev ORDER BY ev.tenant COLLATE \"C\", ev.sku COLLATE \"C\", " \
	"ev.location COLLATE \"C\""

static InventoryStatement check_levels = {
	"check stock levels",
	CHECK_LEVELS_HEAD CHECK_LEVELS_TAIL,
	4, {TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID, TIMESTAMPTZOID}
};

/*
 * 0.6: the same, and g: the level_watch of the slots of each (sku,
 * location) whose level changed, where it differs (with one slot, the
 * caller holds that slot; with several the watch stays NULL, so no slot is
 * touched)
 */
static InventoryStatement check_levels_guarded = {
	"check stock levels",
	CHECK_LEVELS_HEAD
	"g AS (UPDATE inventory.stock_slot s SET level_watch = "
	"inventory.slot_level_watch(k.slots, u.safety_stock, u.low_threshold, u.level) "
	"FROM u JOIN inventory.sku k ON k.tenant = u.tenant AND k.sku = u.sku "
	"WHERE s.tenant = u.tenant AND s.sku = u.sku AND s.location = u.location "
	"AND s.level_watch IS DISTINCT FROM "
	"inventory.slot_level_watch(k.slots, u.safety_stock, u.low_threshold, u.level)), "
	CHECK_LEVELS_TAIL,
	4, {TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID, TIMESTAMPTZOID}
};

/*
 * InventoryCheckLevels
 *		Recomputes the level of each (tenants[i], skus[i], locations[i]),
 *		i < n, from the sum of its stock_slot rows and its stock_location
 *		policy (safety_stock, low_threshold, in units), stores it where it
 *		changed and writes the level events of the crossings (see the file
 *		header), bumping stock_location.version once per event.  One
 *		statement; triples may repeat; a triple without a stock_location
 *		row is ignored.  now: the clock of the call (created_at and
 *		occurred_at of the events).
 *
 * Schema 0.5 on only; runs inside a call (SPI connected, as the owner),
 * after the change of available, with the slots the caller changed still
 * locked.  Errors: those of the statement (lock timeouts, serialization
 * failures), with its name in the CONTEXT.
 */
void
InventoryCheckLevels(int n, const char *const *tenants,
					 const char *const *skus, const char *const *locations,
					 TimestampTz now)
{
	Datum		values[4];

	if (n <= 0)
		return;
	values[0] = InventoryTextArray(tenants, n);
	values[1] = InventoryTextArray(skus, n);
	values[2] = InventoryTextArray(locations, n);
	values[3] = TimestampTzGetDatum(now);
	InventoryRun(InventorySlotGuarded() ? &check_levels_guarded : &check_levels,
				 values, NULL, SPI_OK_INSERT);
}
