/*-------------------------------------------------------------------------
 *
 * src/plans.h
 *		The saved SPI plans of pg_inventory: one per statement.
 *
 *-------------------------------------------------------------------------
 */
#ifndef INVENTORY_PLANS_H
#define INVENTORY_PLANS_H

#include "postgres.h"

#include "executor/spi.h"

typedef enum InventoryPlanId
{
	PLAN_AUTH_TENANT,
	PLAN_RES_CLAIM,
	PLAN_RES_FETCH,
	PLAN_RES_FETCH_LOCK,
	PLAN_STOCK_LOCK,
	PLAN_STOCK_MOVE,
	PLAN_RES_CREATED,
	PLAN_RES_REJECTED,
	PLAN_RES_TRANSITION,
	PLAN_EXPIRE_CLAIM,
	PLAN_EXPIRE_RELEASE,
	PLAN_STOCK_ENSURE,
	PLAN_STOCK_LOCK_ONE,
	PLAN_LEDGER_FETCH,
	PLAN_LEDGER_APPLY,
	PLAN_CHECK_INVARIANTS,
	PLAN_GRANT_TENANT,
	PLAN_REVOKE_TENANT,
	PLAN_RELAY_CLAIM,
	PLAN_RELAY_PUBLISHED,
	PLAN_RELAY_FAILED,
	PLAN_RELAY_RELEASE,
	PLAN_DEAD_REQUEUE,
	PLAN_DEAD_DISCARD,
	PLAN_OUTBOX_PURGE,
	PLAN_SLOT_TAKE_ONE,
	PLAN_SLOT_LOCK_ALL,
	PLAN_SLOT_APPLY,
	PLAN_SLOT_INSERT,
	PLAN_SLOT_DELETE,
	PLAN_SKU_ENSURE,
	PLAN_SKU_LOCK,
	PLAN_SKU_SET_SLOTS,
	PLAN_SKU_MISSING,
	PLAN_EXPIRE_LINES,
	PLAN_LEDGER_RECORD,
	PLAN_CHECK_SLOTS,
	PLAN_SKU_SHARE,
	PLAN_COUNT
} InventoryPlanId;

extern uint64 InventoryExec(InventoryPlanId id, Datum *values,
							const char *nulls, bool read_only,
							int expected_rc);

#endif							/* INVENTORY_PLANS_H */
