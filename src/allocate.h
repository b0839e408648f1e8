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

extern void InventoryReadPolicy(const char *tenant, InventoryPolicy *policy);
extern int	InventoryFirstLocations(const char *tenant, char ***names);
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
