/*-------------------------------------------------------------------------
 *
 * src/pg_inventory.h
 *		Declarations shared by the C files of the pg_inventory extension.
 *
 * Lock order (README "Locking"), followed by every function:
 *	0. the request key lock (0.9 on, reserve only: an advisory lock on a
 *	   hash of the tenant and key, held to the transaction's end; it keeps
 *	   a key once across the reservations' rings, reservation.c);
 *	1. reservation rows (one per call; expire_due and purge_history take a
 *	   batch with SKIP LOCKED and so never wait on them);
 *	2. stock rows, in (tenant, sku) byte order ("C" collation in SQL,
 *	   strcmp in C); with slotted stock (0.3 on), within one SKU either one
 *	   slot taken with SKIP LOCKED, or one slot waited for while holding
 *	   none of the SKU's (released before anything else when it no longer
 *	   holds enough), or all its slots in slot order; with
 *	   locations (0.5 on), in (tenant, sku, location, slot) order, and
 *	   allocation's exact path locks every slot of a cart's SKUs at every
 *	   location in that order with one statement (allocate.c);
 *	3. stock_location rows (0.5 on), in (tenant, sku, location) order, only
 *	   where a stock level changes (level.c) or by restock and adjust,
 *	   after the slots;
 *	4. purged_confirmed rows (0.5 on), in (tenant, sku, location) order,
 *	   by purge_history only, after its reservation rows and (SKIP LOCKED)
 *	   their outbox rows (retention.c).
 * Nobody waits for a reservation row while holding a stock row, nor for a
 * slot while holding a stock_location row, so no two calls deadlock.
 *
 * Files: pg_inventory.c (module, settings, clock, fault points), call.c (the
 * call context: caller, user switch, subtransactions), auth.c (tenant
 * grants), validate.c (arguments), statement.c (the executor), storage.h
 * with storage_row.c and storage_slot.c (the counters), allocate.c (which
 * locations serve a reservation, 0.5 on), location.c and level.c (locations,
 * availability, stock levels, 0.5 on), reservation.c,
 * ledger.c, invariants.c, outbox.c, retention.c (the SQL functions),
 * worker.c (the expiry worker), console.c (the clock and worker status as
 * SQL functions, the operator audit).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_INVENTORY_H
#define PG_INVENTORY_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "fmgr.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

/* Limits (README "SQL API"): characters, units, lines */
#define INVENTORY_NAME_MAX_CHARS	64
#define INVENTORY_KEY_MAX_CHARS		200
#define INVENTORY_REASON_MAX_CHARS	1000
#define INVENTORY_LINES_MAX			100
#define INVENTORY_TTL_MAX_USECS		(7 * USECS_PER_DAY)

/*
 * One SKU (at one location) of a reservation: quantity in units (summed
 * over request lines).  location: in a request, the pinned location or NULL
 * (left to the allocation policy); in a held reservation, where the units
 * are held (schema 0.5 on; always NULL before).  available: for the lines
 * of a rejected reservation, the sellable units the line could use at that
 * moment (-1: not known).
 */
typedef struct InventoryLine
{
	char	   *sku;
	char	   *location;
	int64		quantity;
	int64		available;
} InventoryLine;

/*
 * The lines of a reservation, sorted by (sku, location) (strcmp; NULL
 * before any name) with no duplicates
 */
typedef struct InventoryLines
{
	int			count;
	int64		total;			/* units over all lines, fits an int32 */
	InventoryLine *items;
} InventoryLines;

/* The counters of a SKU (or a slot), in the order of the table columns */
typedef enum InventoryCounter
{
	COUNTER_NONE = -1,
	COUNTER_AVAILABLE = 0,
	COUNTER_RESERVED = 1,
	COUNTER_CONSUMED = 2
} InventoryCounter;

#define INVENTORY_COUNTERS 3

struct InventoryStorage;

/*
 * The context of one SQL-callable invocation: who called, for which tenant,
 * as whom the statements run, and against which schema generation.  Made by
 * InventoryBeginCall, ended by InventoryEndCall (or by the error).
 */
typedef struct InventoryCall
{
	FunctionCallInfo fcinfo;
	const char *tenant;			/* NULL: the call names no tenant */
	Oid			caller;			/* role in effect at the call */
	char	   *actor;			/* its name, for the logs */
	const struct InventoryStorage *storage; /* the counters' layout */
	bool		marked_grants;	/* 0.4 on: grants carry a role marker */
	bool		located;		/* 0.5 on: stock per (sku, location) */
	bool		guarded;		/* 0.6 on: slots carry keep_units and
								 * level_watch (storage_slot.c) */
	bool		ringed;			/* 0.9 on: reservations in rings
								 * (retention.c) */
	MemoryContext outer_cxt;	/* the caller's context, for the result */
	Oid			save_userid;
	int			save_sec_context;
} InventoryCall;

/*
 * pg_locks.objsubid of the advisory locks pg_inventory takes (values user
 * code cannot take: pg_advisory_lock uses 1 and 2): 20553 to 20555 are the
 * outbox's (outbox.c); REQUEST_KEY (0.9) is reserve's lock on a hash of
 * (tenant, request key), HISTORY_PURGE (0.9) purge_history's on the
 * reservations' rings (retention.c).
 */
#define INVENTORY_LOCK_REQUEST_KEY	20556
#define INVENTORY_LOCK_HISTORY_PURGE	20557

/* outbox.c */
extern int64 InventorySequenceLastValue(Oid seq, bool *isnull);

/*
 * A table kept in rings (partitions emptied whole, PgQ's rotating tables):
 * the outbox (0.8, outbox.c) and the reservations (0.9, retention.c).
 * InventoryPurgeRings (retention.c) drives a purge of one of them.
 */
struct InventoryStatement;
typedef struct InventoryRingOps
{
	int			rings;			/* how many rings */
	uint16		purge_lock;		/* objsubid of the purge's advisory lock */
	struct InventoryStatement *current;	/* reads the current ring (int4) */
	struct InventoryStatement *set; /* makes ring $1 (int8) current */
	/* whether ring may be emptied now; *has_rows: whether it holds rows */
	bool		(*due) (int ring, int next, bool *has_rows, void *arg);
	/* empties ring (cur is current); rows removed, or -1 when it is kept */
	int64		(*empty) (int ring, int cur, void *arg);
	/* whether the current ring is old enough to hand over to the next */
	bool		(*aged) (int cur, void *arg);
} InventoryRingOps;

/* retention.c */
extern int64 InventoryPurgeRings(const InventoryRingOps *ops, void *arg);

/* pg_inventory.c */
extern TimestampTz InventoryNow(void);
extern char *inventory_worker_database;
extern int	inventory_worker_interval_ms;
extern int	inventory_worker_batch_size;
extern int	inventory_outbox_retention_s;
extern int	inventory_history_retention_s;
extern int	inventory_auto_slots;
extern int	inventory_auto_slots_samples;
extern int	inventory_auto_slots_interval_ms;
extern int	inventory_auto_slots_idle_s;
extern const char *inventory_slots_audit_reason;
extern void InventoryTestPause(void);
extern void InventoryFaultPoint(const char *step);

/* What a call site keeps between calls (fn_extra) */
typedef struct InventoryFnCache
{
	Oid			owner;			/* owner of the function: the writer */
	TupleDesc	result;			/* blessed result descriptor, or NULL */
} InventoryFnCache;

/* call.c */
extern InventoryFnCache *InventoryCallCache(FunctionCallInfo fcinfo);
extern void InventoryBeginCall(FunctionCallInfo fcinfo, InventoryCall *call,
							   const char *tenant);
extern void InventoryEndCall(InventoryCall *call);
extern bool InventorySubtransaction(bool (*work) (void *arg), void *arg);
extern bool InventoryTrySubtransaction(void (*work) (void *arg), void *arg,
									   bool (*skip) (ErrorData *edata),
									   ErrorData **skipped);

/* auth.c */
extern void InventoryAuthorise(InventoryCall *call, const char *tenant);

/* validate.c */
#define NAME_WILDCARD	0x01	/* "*" allowed (grants) */
#define NAME_CANONICAL	0x02	/* NFC, no white space at either end */
extern char *InventoryNameArg(FunctionCallInfo fcinfo, int argno,
							  const char *argname, int flags);
extern void InventoryCheckName(const char *argname, const char *s,
							   int flags);
extern char *InventoryKeyArg(FunctionCallInfo fcinfo, int argno,
							 const char *argname, int flags);
extern char *InventoryReasonArg(FunctionCallInfo fcinfo, int argno,
								const char *argname, bool required);
extern void InventoryRequireArg(FunctionCallInfo fcinfo, int argno,
								const char *argname);
extern int32 InventoryQuantityArg(FunctionCallInfo fcinfo, int argno,
								  const char *negative_hint,
								  const char *zero_hint);
extern int64 InventoryTtlArg(FunctionCallInfo fcinfo, int argno);
extern TimestampTz InventoryExpiry(TimestampTz now, int64 ttl_usecs);
extern int	InventoryCompareLines(const void *a, const void *b);
extern void InventoryParseLines(Jsonb *jb, bool pins, InventoryLines *lines);
extern void InventoryOneLine(const char *sku, int32 quantity,
							 InventoryLines *lines);
extern bool InventoryLinesEqual(const InventoryLines *a,
								const InventoryLines *b);
extern char *InventoryLinesText(const InventoryLines *lines);
extern Datum InventorySkuArray(const InventoryLines *lines);
extern Datum InventoryQuantityArray(const InventoryLines *lines, Oid elemtype);
extern Datum InventoryTextArray(const char *const *items, int n);
extern Datum InventoryInt8Array(const int64 *items, int n);

/* errors raised in more than one file */
extern void InventoryUnknownSku(const char *tenant, const char *sku,
								const char *hint) pg_attribute_noreturn();
extern void InventoryUnknownSkus(const char *tenant, int n,
								 const char *const *skus,
								 const char *hint) pg_attribute_noreturn();
extern void InventoryKeyReused(const char *key, const char *detail,
							   const char *hint) pg_attribute_noreturn();
extern void InventoryBrokenSku(const char *tenant, const char *sku,
							   int64 units) pg_attribute_noreturn();

/*
 * Locations (schema 0.5 on): location.c (set_location,
 * set_allocation_policy, set_stock_policy, availability), level.c (stock
 * levels and their events), auth.c (acting for every tenant)
 */
#define INVENTORY_DEFAULT_LOCATION	"default"
#define INVENTORY_PRIORITY_MAX		1000000
#define INVENTORY_AVAILABILITY_MAX_SKUS 1000
extern void InventoryRequireLocated(const InventoryCall *call,
									const char *function);
extern void InventoryUnknownLocation(const char *tenant,
									 const char *location) pg_attribute_noreturn();
extern void InventoryCheckLevels(int n, const char *const *tenants,
								 const char *const *skus,
								 const char *const *locations,
								 TimestampTz now);
extern bool InventoryActsForAll(InventoryCall *call);

/* outbox.c: argument checks shared with retention.c */
extern Interval *InventoryIntervalArg(FunctionCallInfo fcinfo, int argno,
									  const char *argname, const char *min_text,
									  bool or_equal, const char *max_text);
extern int32 InventoryIntArg(FunctionCallInfo fcinfo, int argno,
							 const char *argname, int32 min, int32 max);

/*
 * The DBA's console (schema 0.5 on): console.c (clock, worker_status, the
 * operator audit written by the operator functions that change something)
 */
extern char *InventoryJsonText(const char *s);
extern void InventoryAudit(const InventoryCall *call, const char *action,
						   const char *tenant, const char *detail,
						   const char *reason);

/* worker.c */
extern void InventoryRegisterWorker(void);
PGDLLEXPORT void InventoryWorkerMain(Datum main_arg);

#endif							/* PG_INVENTORY_H */
