/*-------------------------------------------------------------------------
 *
 * src/backend_cache.c
 *		A backend's memory of answers read from one table of the extension,
 *		forgotten at every invalidation of that table or of the syscaches
 *		the answers depend on (see backend_cache.h for the protocol).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "backend_cache.h"

/* Forgets every entry and counts the invalidation. */
static void
CacheForget(InventoryBackendCache *cache)
{
	cache->generation++;
	if (cache->htab != NULL)
	{
		hash_destroy(cache->htab);
		cache->htab = NULL;
	}
}

/* A syscache invalidation of one of the cache's syscaches */
static void
CacheSyscacheCallback(Datum arg, int cacheid, uint32 hashvalue)
{
	InventoryBackendCache *cache = (InventoryBackendCache *) DatumGetPointer(arg);

	if (cache->concerns == NULL || cache->concerns(cacheid, hashvalue))
		CacheForget(cache);
}

/* A relcache invalidation of the cache's table, or of every relation */
static void
CacheRelcacheCallback(Datum arg, Oid relid)
{
	InventoryBackendCache *cache = (InventoryBackendCache *) DatumGetPointer(arg);

	if (!OidIsValid(relid) || relid == cache->relid)
		CacheForget(cache);
}

/*
 * InventoryCacheFind
 *		The entry of key, after taking in the invalidations other sessions
 *		committed (they may drop it); NULL when there is none.
 */
void *
InventoryCacheFind(InventoryBackendCache *cache, const void *key)
{
	AcceptInvalidationMessages();
	if (cache->htab == NULL)
		return NULL;
	return hash_search(cache->htab, key, HASH_FIND, NULL);
}

/*
 * InventoryCacheBeginRead
 *		Before reading an answer to store: registers the callbacks (once
 *		per backend) and looks up the table's OID (it changes when the
 *		extension is created again); returns the generation to give
 *		InventoryCacheStore.  Errors: 3F000 when schema inventory is gone.
 */
uint64
InventoryCacheBeginRead(InventoryBackendCache *cache)
{
	if (!cache->registered)
	{
		const int  *id;

		for (id = cache->syscaches; id != NULL && *id >= 0; id++)
			CacheRegisterSyscacheCallback(*id, CacheSyscacheCallback,
										  PointerGetDatum(cache));
		CacheRegisterRelcacheCallback(CacheRelcacheCallback,
									  PointerGetDatum(cache));
		cache->registered = true;
	}
	cache->relid = get_relname_relid(cache->relname,
									 get_namespace_oid("inventory", false));
	return cache->generation;
}

/*
 * InventoryCacheStore
 *		The new entry of key, for the caller to fill in, when no
 *		invalidation arrived since InventoryCacheBeginRead returned
 *		generation; NULL when one did (the answer may predate it: it is
 *		not stored), or when the table was not found under its name at
 *		InventoryCacheBeginRead (renamed: its invalidations would never
 *		match).  A full cache starts again empty.
 */
void *
InventoryCacheStore(InventoryBackendCache *cache, uint64 generation,
					const void *key)
{
	if (generation != cache->generation)
		return NULL;
	/* the table is gone or renamed: no invalidation would reach an entry */
	if (!OidIsValid(cache->relid))
		return NULL;
	if (cache->htab != NULL &&
		hash_get_num_entries(cache->htab) >= cache->max_entries)
	{
		hash_destroy(cache->htab);
		cache->htab = NULL;
	}
	if (cache->htab == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = cache->keysize;
		ctl.entrysize = cache->entrysize;
		ctl.hcxt = TopMemoryContext;
		cache->htab = hash_create(cache->name, 64, &ctl,
								  HASH_ELEM | HASH_CONTEXT |
								  (cache->string_keys ? HASH_STRINGS : HASH_BLOBS));
	}
	return hash_search(cache->htab, key, HASH_ENTER, NULL);
}
