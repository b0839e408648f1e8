/*-------------------------------------------------------------------------
 *
 * src/backend_cache.h
 *		A backend's memory of answers it read from one table of the
 *		extension (0.6 on: the grant cache of auth.c, the location cache of
 *		allocate.c), forgotten whenever PostgreSQL says that what the
 *		answers were read from may have changed.
 *
 * A cache is a static InventoryBackendCache that names the table whose
 * relcache invalidations drop it (its statement trigger sends one at every
 * change, whoever makes it: inventory._table_changed) and the syscaches
 * whose invalidations drop it too (-1 ends the list), and sizes its
 * entries, which begin with their key:
 *
 *		static const int grant_syscaches[] = {AUTHOID, ..., -1};
 *		static InventoryBackendCache grant_cache = {
 *			"pg_inventory tenant grants", "tenant_grant", grant_syscaches,
 *			sizeof(GrantCacheKey), sizeof(GrantCacheKey), false, 1024,
 *			GrantCacheConcerns
 *		};
 *
 * (concerns, when set, lets a syscache invalidation through only if it may
 * be about what the answers read: the grant cache minds one type of
 * pg_type, not every type a CREATE TABLE makes).  A cache's hash table
 * shows in pg_backend_memory_contexts (a context named as the cache) while
 * it holds anything.
 *
 * A lookup first takes in the invalidations other sessions committed
 * (AcceptInvalidationMessages), so a change that committed before the call
 * is never answered from memory.  A reader stores what it read only when
 * no invalidation arrived while it read: the statement's snapshot is taken
 * before its locks, and taking a lock takes in invalidations, so a change
 * that commits meanwhile can be taken in (dropping the cache) while the
 * statement still reads from the older snapshot.  So:
 *
 *		if ((entry = InventoryCacheFind(&cache, &key)) != NULL)
 *			return entry's answer;
 *		generation = InventoryCacheBeginRead(&cache);
 *		... read the answer (latest committed rows) ...
 *		if ((entry = InventoryCacheStore(&cache, generation, &key)) != NULL)
 *			fill in entry's answer;
 *
 * as PostgreSQL's own caches retry a load that an invalidation overtook.
 * Entries live in TopMemoryContext; a full cache starts again empty.
 *
 *-------------------------------------------------------------------------
 */
#ifndef INVENTORY_BACKEND_CACHE_H
#define INVENTORY_BACKEND_CACHE_H

#include "postgres.h"

#include "utils/hsearch.h"

typedef struct InventoryBackendCache
{
	/* what the cache is (set by its definition) */
	const char *name;			/* of its hash table, for memory reports */
	const char *relname;		/* inventory.<relname> */
	const int  *syscaches;		/* syscache ids, ended by -1; NULL: none */
	Size		keysize;		/* the key starts the entry */
	Size		entrysize;
	bool		string_keys;	/* NUL-terminated string keys (HASH_STRINGS) */
	long		max_entries;
	/* whether a syscache invalidation concerns the cache; NULL: every one */
	bool		(*concerns) (int cacheid, uint32 hashvalue);

	/* its state in this backend */
	HTAB	   *htab;			/* NULL: empty */
	Oid			relid;			/* of relname, looked up at each read */
	bool		registered;		/* callbacks registered */
	uint64		generation;		/* invalidations taken in */
} InventoryBackendCache;

extern void *InventoryCacheFind(InventoryBackendCache *cache, const void *key);
extern uint64 InventoryCacheBeginRead(InventoryBackendCache *cache);
extern void *InventoryCacheStore(InventoryBackendCache *cache,
								 uint64 generation, const void *key);

#endif							/* INVENTORY_BACKEND_CACHE_H */
