/*-------------------------------------------------------------------------
 *
 * src/storage.h
 *		The storage interface: how the counters of a SKU are held, locked
 *		and moved.  The business code (reservation.c, ledger.c,
 *		invariants.c) calls only this; which implementation runs is chosen
 *		once per call by InventoryBeginCall from the installed schema:
 *
 *	InventoryRowStorage		0.1 and 0.2: one row of table inventory.stock
 *							per (tenant, sku) (storage_row.c)
 *	InventorySlotStorage	0.3 and 0.4: a SKU's counters split over slots,
 *							rows of inventory.stock_slot, with inventory.sku
 *							as the catalog and inventory.stock a view of the
 *							totals (storage_slot.c)
 *	InventoryLocatedStorage	0.5 on: the same per (sku, location), with
 *							inventory.stock_location as the catalog of a
 *							SKU's counters at a location (its safety stock,
 *							level and version) (storage_slot.c); 0.6 on,
 *							each slot also carries its guards (keep_units,
 *							level_watch), so the fast path reads one row
 *
 * The library serves every installable version, so that a new library runs
 * the old schema correctly in the time between installing the package and
 * ALTER EXTENSION pg_inventory UPDATE (README "Upgrading").
 *
 * Every implementation locks in the order of pg_inventory.h and keeps each
 * counter (per slot, and so per SKU) at zero or above with CHECK
 * constraints.  Quantities are units.
 *
 *-------------------------------------------------------------------------
 */
#ifndef INVENTORY_STORAGE_H
#define INVENTORY_STORAGE_H

#include "pg_inventory.h"
#include "statement.h"

typedef struct InventoryStorage
{
	const char *name;

	/*
	 * restock, register_sku: creates (tenant, sku) with all counters 0 if it
	 * is new; with locations (0.5 on), also the SKU's counters at location
	 * (which must exist); location is NULL for the schemas before.  Returns
	 * whether it created the counters (of the SKU, at location 0.5 on).
	 */
	bool		(*ensure_sku) (const char *tenant, const char *sku,
							   const char *location, TimestampTz now);

	/*
	 * reserve: moves every line's units from available to reserved, or none
	 * of them; returns false (nothing changed) when a line does not fit.
	 * Errors: IN002 for a SKU the tenant never stocked.
	 */
	bool		(*hold) (const char *tenant, const InventoryLines *lines,
						 TimestampTz now);

	/*
	 * 0.5, allocation's first try: holds every line from one free slot
	 * holding enough (the fast path alone), or returns false as soon as a
	 * line is not served so; the caller runs it in a subtransaction and
	 * rolls that back on false.  No subtransaction of its own: a row lock
	 * taken in a subtransaction that committed into the first try would
	 * keep a waiter waiting for the caller's whole transaction even after
	 * the first try is rolled back, and the caller's exact path could
	 * then deadlock with that waiter.  NULL before 0.5.
	 */
	bool		(*try_hold) (const char *tenant, const InventoryLines *lines,
							 TimestampTz now);

	/*
	 * confirm, cancel, compensate, expiry of one reservation: moves the
	 * units of lines from counter "from" to counter "to".  The units are
	 * there (the reservation holds them); anything else is XX000.
	 */
	void		(*move) (const char *tenant, const InventoryLines *lines,
						 InventoryCounter from, InventoryCounter to,
						 TimestampTz now);

	/*
	 * expire_due: moves the units of the reservations ids (an int8[]
	 * Datum), just expired, from reserved back to available, locking every
	 * SKU concerned in (tenant, sku) order.
	 */
	void		(*release) (Datum ids, TimestampTz now);

	/*
	 * restock, adjust: locks every counter row of the SKU (at location, 0.5
	 * on; NULL before) and reads the totals into counts[INVENTORY_COUNTERS];
	 * returns what set_available needs, or NULL for a SKU the tenant never
	 * stocked (there).
	 */
	void	   *(*lock_sku) (const char *tenant, const char *sku,
							 const char *location, int64 *counts);

	/* restock, adjust: sets the available units of a SKU locked above */
	void		(*set_available) (void *locked, int64 available,
								  TimestampTz now);

	/*
	 * check_invariants: a relation (a table name or a subquery) with the
	 * columns tenant, sku, available, reserved, consumed of every SKU, the
	 * counts as numeric so that no sum can fail
	 */
	const char *counts;

	/* check_invariants: the checks of this layout, or NULL */
	InventoryStatement *check;
} InventoryStorage;

extern const InventoryStorage InventoryRowStorage;
/* Units reservations may take of a SKU at a location (0.5 on) */
typedef struct InventorySellable
{
	char	   *sku;
	char	   *location;
	int64		sellable;		/* available beyond the safety stock, >= 0 */
} InventorySellable;

/*
 * The records of a new single-line pending reservation, as three CTEs (l,
 * t, o) of one statement: its line, its transition NULL -> pending and its
 * reservation.reserved event, each the parameter or expression given
 * (id, tenant, sku, quantity int4, location, actor, clock, event id,
 * payload jsonb), each written once per row of "from" (a FROM clause, or
 * "" for once).  reservation.c's record_reserved_one and
 * InventoryHoldOneRecorded's statement both write them with it, so the two
 * paths write the same rows.
 */
#define INVENTORY_RESERVED_ONE_RECORDS(id, tenant, sku, qty, location, actor, \
									   clock, event_id, payload, from) \
	"l AS (INSERT INTO inventory.reservation_line " \
	"(reservation_id, tenant, sku, quantity, location) " \
	"SELECT " id ", " tenant ", " sku ", " qty ", " location " " from "), " \
	"t AS (INSERT INTO inventory.reservation_transition " \
	"(reservation_id, from_state, to_state, reason, actor, version, created_at) " \
	"SELECT " id ", NULL, 'pending', NULL, " actor ", 1, " clock " " from "), " \
	"o AS (INSERT INTO inventory.outbox " \
	"(event_id, event_type, tenant, reservation_id, payload, created_at) " \
	"SELECT " event_id ", 'reservation.reserved', " tenant ", " id ", " \
	payload ", " clock " " from ") "

/* What InventoryHoldOneRecorded did */
typedef enum InventoryHoldResult
{
	INVENTORY_HOLD_NOT_TAKEN,	/* no free slot held enough: nothing changed */
	INVENTORY_HOLD_TAKEN,		/* held, the level checked, not recorded */
	INVENTORY_HOLD_RECORDED		/* held and recorded */
} InventoryHoldResult;

extern InventoryHoldResult InventoryHoldOneRecorded(const char *tenant,
													const InventoryLine *line,
													TimestampTz now, int64 id,
													const char *actor,
													Datum event_id,
													Datum payload);
extern bool InventoryHoldLocked(const char *tenant,
								const InventoryLines *lines, TimestampTz now);
extern int	InventoryLockSellable(const char *tenant, int nskus,
								  const char *const *skus,
								  InventorySellable **stock);

extern const InventoryStorage InventorySlotStorage;
extern void InventoryCheckStocked(const char *tenant, Datum skus);
extern void InventorySlotSpread(uint32 key);
extern void InventorySlotGuards(bool guarded);
extern bool InventorySlotGuarded(void);
extern void InventoryRefreshSlotGuards(const char *tenant, const char *sku);
extern const InventoryStorage InventoryLocatedStorage;

#endif							/* INVENTORY_STORAGE_H */
