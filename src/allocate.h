/*-------------------------------------------------------------------------
 *
 * src/allocate.h
 *		Allocation of a reservation's lines to locations (schema 0.5 on);
 *		see allocate.c for the policy.
 *
 *-------------------------------------------------------------------------
 */
#ifndef INVENTORY_ALLOCATE_H
#define INVENTORY_ALLOCATE_H

#include "pg_inventory.h"

/* A tenant's locations in allocation order and its splitting rule */
typedef struct InventoryPolicy
{
	int			count;
	char	  **names;			/* by (priority, name) */
	bool	   *active;
	int32	   *priority;
	bool		allow_split;
} InventoryPolicy;

/*
 * The policy's columns in SQL, for the tenant given as the expression
 * tenant: the location names, active flags and priorities in (priority,
 * name) order, and allow_split; they read the FROM item
 * INVENTORY_POLICY_FROM
 */
#define INVENTORY_POLICY_COLUMNS(tenant) \
	"p.names, p.active, p.priority, " \
	"COALESCE((SELECT a.allow_split FROM inventory.allocation_policy a " \
	"WHERE a.tenant = " tenant "), false)"

/* The FROM item the columns above read: one scan of the tenant's locations */
#define INVENTORY_POLICY_FROM(tenant) \
	"(SELECT COALESCE(array_agg(l.location::text ORDER BY l.priority, l.location), '{}') AS names, " \
	"COALESCE(array_agg(l.active ORDER BY l.priority, l.location), '{}') AS active, " \
	"COALESCE(array_agg(l.priority ORDER BY l.priority, l.location), '{}') AS priority " \
	"FROM inventory.location l WHERE l.tenant = " tenant ") p"

extern void InventoryPolicyFromResult(int first, InventoryPolicy *policy);
extern void InventoryReadPolicy(const char *tenant, InventoryPolicy *policy);
extern int	InventoryPolicyRank(const InventoryPolicy *policy,
								const char *location);
extern void InventorySortLines(InventoryLines *lines);
extern int	InventoryDistinctSkus(const InventoryLines *lines,
								  const char ***skus);
extern bool InventoryAllocateExact(InventoryCall *call,
								   const InventoryLines *request,
								   const InventoryPolicy *policy, int nskus,
								   const char *const *skus,
								   InventoryLines *held,
								   InventoryLines *rejection);
extern bool InventoryAllocate(InventoryCall *call,
							  const InventoryLines *request,
							  const InventoryPolicy *policy,
							  InventoryLines *held,
							  InventoryLines *rejection, TimestampTz now);

#endif							/* INVENTORY_ALLOCATE_H */
