/*-------------------------------------------------------------------------
 *
 * src/storage_row.c
 *		Row storage (schemas 0.1 and 0.2): the counters of a SKU are one row
 *		of table inventory.stock.  See storage.h for the interface.
 *
 * Every statement that changes stock rows locks them first in (tenant,
 * sku) order, through an ORDER BY ... FOR UPDATE, before it updates them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "storage.h"

/* A locked stock row, for set_available */
typedef struct LockedRow
{
	char	   *tenant;
	char	   *sku;
} LockedRow;

static InventoryStatement ensure_sku = {
	"create stock row",
	"INSERT INTO inventory.stock (tenant, sku, created_at, updated_at) "
	"VALUES ($1, $2, $3, $3) ON CONFLICT (tenant, sku) DO NOTHING",
	3, {TEXTOID, TEXTOID, TIMESTAMPTZOID}
};

static bool
RowEnsureSku(const char *tenant, const char *sku, const char *location,
			 TimestampTz now)
{
	Datum		values[3];

	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(sku);
	values[2] = TimestampTzGetDatum(now);
	return InventoryRun(&ensure_sku, values, NULL, SPI_OK_INSERT) > 0;
}

/*
 * $4 available, $5 reserved, $6 consumed: the factor (-1, 0 or 1) of each
 * counter times the line's quantity.  The CTE takes the row locks in sku
 * order before the update touches a row.  $1 tenant, $2 skus, $3
 * quantities, $7 clock.
 */
static InventoryStatement move_units = {
	"move units between stock counters",
	"WITH locked AS (SELECT s.sku FROM inventory.stock s "
	"WHERE s.tenant = $1 AND s.sku = ANY ($2) ORDER BY s.sku FOR UPDATE) "
	"UPDATE inventory.stock s SET "
	"available = s.available + $4 * m.qty, "
	"reserved = s.reserved + $5 * m.qty, "
	"consumed = s.consumed + $6 * m.qty, "
	"updated_at = $7 "
	"FROM locked JOIN unnest($2, $3) AS m(sku, qty) ON m.sku = locked.sku "
	"WHERE s.tenant = $1 AND s.sku = locked.sku",
	7, {TEXTOID, TEXTARRAYOID, INT8ARRAYOID, INT8OID, INT8OID, INT8OID,
	TIMESTAMPTZOID}
};

static void
RowMove(const char *tenant, const InventoryLines *lines,
		InventoryCounter from, InventoryCounter to, TimestampTz now)
{
	int			factor[INVENTORY_COUNTERS] = {0, 0, 0};
	Datum		values[7];

	factor[from] = -1;
	if (to != COUNTER_NONE)
		factor[to] = 1;
	values[0] = CStringGetTextDatum(tenant);
	values[1] = InventorySkuArray(lines);
	values[2] = InventoryQuantityArray(lines, INT8OID);
	values[3] = Int64GetDatum(factor[COUNTER_AVAILABLE]);
	values[4] = Int64GetDatum(factor[COUNTER_RESERVED]);
	values[5] = Int64GetDatum(factor[COUNTER_CONSUMED]);
	values[6] = TimestampTzGetDatum(now);
	if (InventoryRun(&move_units, values, NULL, SPI_OK_UPDATE) !=
		(uint64) lines->count)
		InventoryBrokenSku(tenant, lines->items[0].sku, lines->items[0].quantity);
}

/* $1 tenant, $2 skus: the rows locked in sku order */
static InventoryStatement lock_rows = {
	"lock stock rows",
	"SELECT s.sku::text, s.available FROM inventory.stock s "
	"WHERE s.tenant = $1 AND s.sku = ANY ($2) "
	"ORDER BY s.sku FOR UPDATE",
	2, {TEXTOID, TEXTARRAYOID}
};

/*
 * RowHold
 *		Locks the stock row of every line in sku order and, if every line
 *		fits, moves its units from available to reserved.
 */
static bool
RowHold(const char *tenant, const InventoryLines *lines, TimestampTz now)
{
	Datum		values[2];
	uint64		nlocked;
	uint64		row = 0;
	bool		sufficient = true;
	const char **unknown = palloc(sizeof(char *) * lines->count);
	int			nunknown = 0;
	int			i;

	values[0] = CStringGetTextDatum(tenant);
	values[1] = InventorySkuArray(lines);
	nlocked = InventoryRun(&lock_rows, values, NULL, SPI_OK_SELECT);
	/* lines and rows are both in sku order: every line without a row is unknown */
	for (i = 0; i < lines->count; i++)
	{
		if (row >= nlocked ||
			strcmp(InventoryResultText(row, 1), lines->items[i].sku) != 0)
		{
			unknown[nunknown++] = lines->items[i].sku;
			continue;
		}
		if (InventoryResultInt64(row, 2) < lines->items[i].quantity)
			sufficient = false;
		row++;
	}
	if (nunknown > 0)
		InventoryUnknownSkus(tenant, nunknown, unknown, NULL);
	if (sufficient)
		RowMove(tenant, lines, COUNTER_AVAILABLE, COUNTER_RESERVED, now);
	return sufficient;
}

/* $1 expired reservations, $2 clock: their units back to available */
static InventoryStatement release_units = {
	"release units of expired reservations",
	"WITH agg AS (SELECT l.tenant, l.sku, sum(l.quantity)::bigint AS qty "
	"FROM inventory.reservation_line l WHERE l.reservation_id = ANY ($1) "
	"GROUP BY l.tenant, l.sku), "
	"locked AS (SELECT s.tenant, s.sku FROM inventory.stock s "
	"JOIN agg ON agg.tenant = s.tenant AND agg.sku = s.sku "
	"ORDER BY s.tenant, s.sku FOR UPDATE OF s) "
	"UPDATE inventory.stock s SET available = s.available + agg.qty, "
	"reserved = s.reserved - agg.qty, updated_at = $2 "
	"FROM locked JOIN agg ON agg.tenant = locked.tenant AND agg.sku = locked.sku "
	"WHERE s.tenant = locked.tenant AND s.sku = locked.sku",
	2, {INT8ARRAYOID, TIMESTAMPTZOID}, NULL, true
};

static void
RowRelease(Datum ids, TimestampTz now)
{
	Datum		values[2];

	values[0] = ids;
	values[1] = TimestampTzGetDatum(now);
	InventoryRun(&release_units, values, NULL, SPI_OK_UPDATE);
}

/* $1 tenant, $2 sku */
static InventoryStatement lock_row = {
	"lock stock row",
	"SELECT s.available, s.reserved, s.consumed FROM inventory.stock s "
	"WHERE s.tenant = $1 AND s.sku = $2 FOR UPDATE",
	2, {TEXTOID, TEXTOID}
};

static void *
RowLockSku(const char *tenant, const char *sku, const char *location,
		   int64 *counts)
{
	Datum		values[2];
	LockedRow  *locked;
	int			k;

	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(sku);
	if (InventoryRun(&lock_row, values, NULL, SPI_OK_SELECT) == 0)
		return NULL;
	for (k = 0; k < INVENTORY_COUNTERS; k++)
		counts[k] = InventoryResultInt64(0, k + 1);
	locked = palloc(sizeof(LockedRow));
	locked->tenant = pstrdup(tenant);
	locked->sku = pstrdup(sku);
	return locked;
}

/* $1 tenant, $2 sku, $3 available, $4 clock */
static InventoryStatement set_available = {
	"set available of stock row",
	"UPDATE inventory.stock s SET available = $3, updated_at = $4 "
	"WHERE s.tenant = $1 AND s.sku = $2",
	4, {TEXTOID, TEXTOID, INT8OID, TIMESTAMPTZOID}
};

static void
RowSetAvailable(void *locked, int64 available, TimestampTz now)
{
	LockedRow  *row = (LockedRow *) locked;
	Datum		values[4];

	values[0] = CStringGetTextDatum(row->tenant);
	values[1] = CStringGetTextDatum(row->sku);
	values[2] = Int64GetDatum(available);
	values[3] = TimestampTzGetDatum(now);
	if (InventoryRun(&set_available, values, NULL, SPI_OK_UPDATE) != 1)
		elog(ERROR, "pg_inventory: stock row of SKU \"%s\" vanished under its lock",
			 row->sku);
}

const InventoryStorage InventoryRowStorage = {
	"row",
	RowEnsureSku,
	RowHold,
	NULL,
	RowMove,
	RowRelease,
	RowLockSku,
	RowSetAvailable,
	"(SELECT s.tenant, s.sku, s.available::numeric AS available, "
	"s.reserved::numeric AS reserved, s.consumed::numeric AS consumed "
	"FROM inventory.stock s)",
	NULL
};
