/*-------------------------------------------------------------------------
 *
 * src/pg_inventory.h
 *		Declarations shared by the C files of the pg_inventory extension.
 *
 * Lock order (CONTRACT.md "Locking order"), followed by every function:
 *	1. reservation rows (one per call; expire_due takes a batch with
 *	   SKIP LOCKED and so never waits on them);
 *	2. stock rows, in (tenant, sku) byte order ("C" collation in SQL,
 *	   strcmp in C); with slotted stock (0.3), within one SKU either one
 *	   slot taken with SKIP LOCKED or all its slots in slot order.
 * Nobody waits for a reservation row while holding a stock row, so no two
 * calls deadlock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_INVENTORY_H
#define PG_INVENTORY_H

#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "access/tupdesc.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

/* Limits of CONTRACT.md "Limits" */
#define INVENTORY_NAME_MAX_CHARS	64
#define INVENTORY_KEY_MAX_CHARS		200
#define INVENTORY_REASON_MAX_CHARS	1000
#define INVENTORY_LINES_MAX			100

/* One SKU of a reservation: quantity in units (summed over request lines) */
typedef struct InventoryLine
{
	char	   *sku;
	int64		quantity;
} InventoryLine;

/* The lines of a reservation, sorted by sku (strcmp) with no duplicates */
typedef struct InventoryLines
{
	int			count;
	int64		total;			/* units over all lines, fits an int32 */
	InventoryLine *items;
} InventoryLines;

/* What a call site (fn_extra) keeps between calls */
typedef struct InventoryFnCache
{
	Oid			owner;			/* owner of the function: the writer */
	TupleDesc	outcome;		/* blessed inventory.outcome, or NULL */
} InventoryFnCache;

/* State of one SQL-callable invocation: who called, and as whom we write */
typedef struct InventoryCall
{
	Oid			caller;			/* role in effect at the call */
	char	   *actor;			/* its name, for logs */
	Oid			save_userid;
	int			save_sec_context;
	MemoryContext outer_cxt;	/* context of the caller, for the result */
} InventoryCall;

/* The counters of a stock slot (0.3), in the order of the columns */
typedef enum InventoryCounter
{
	COUNTER_NONE = -1,
	COUNTER_AVAILABLE = 0,
	COUNTER_RESERVED = 1,
	COUNTER_CONSUMED = 2
} InventoryCounter;

/* A change of the counters of one slot, in units */
typedef struct InventorySlotChange
{
	char	   *tenant;
	char	   *sku;
	int32		slot;
	int64		delta[3];		/* by InventoryCounter */
} InventorySlotChange;

typedef struct InventorySlotChanges
{
	int			count;
	int			capacity;
	InventorySlotChange *items;
} InventorySlotChanges;

typedef enum InventorySlotMoveResult
{
	SLOT_MOVE_DONE,
	SLOT_MOVE_SHORT,
	SLOT_MOVE_UNKNOWN
} InventorySlotMoveResult;

/* pg_inventory.c */
extern TimestampTz InventoryNow(void);
extern char *inventory_worker_database;
extern int	inventory_worker_interval_ms;
extern int	inventory_worker_batch_size;
extern int	inventory_test_pause_lock;
extern int	inventory_outbox_retention_s;
extern void InventoryTestPause(void);

/* validate.c */
extern char *InventoryNameArg(FunctionCallInfo fcinfo, int argno,
							  const char *argname, bool allow_wildcard);
extern char *InventoryKeyArg(FunctionCallInfo fcinfo, int argno,
							 const char *argname);
extern char *InventoryReasonArg(FunctionCallInfo fcinfo, int argno,
								const char *argname, bool required);
extern void InventoryRequireArg(FunctionCallInfo fcinfo, int argno,
								const char *argname);
extern Interval *InventoryTtlArg(FunctionCallInfo fcinfo, int argno);
extern void InventoryParseLines(Jsonb *jb, InventoryLines *lines);
extern void InventoryOneLine(const char *sku, int32 quantity,
							 InventoryLines *lines);
extern bool InventoryLinesEqual(const InventoryLines *a,
								const InventoryLines *b);
extern char *InventoryLinesText(const InventoryLines *lines);
extern Datum InventorySkuArray(const InventoryLines *lines);
extern Datum InventoryQuantityArray(const InventoryLines *lines, Oid elemtype);

/* auth.c */
extern void InventoryBeginCall(FunctionCallInfo fcinfo, InventoryCall *call,
							   const char *tenant);
extern void InventoryEndCall(InventoryCall *call);

/* slots.c */
extern bool InventorySlotted(void);
extern InventorySlotMoveResult InventorySlotMove(const char *tenant,
												 const char *sku, int64 qty,
												 InventoryCounter from,
												 InventoryCounter to,
												 bool rebalance,
												 TimestampTz now,
												 InventorySlotChanges *done);
extern void InventorySlotUndo(const InventorySlotChanges *changes,
							  TimestampTz now);
extern void InventorySlotMoveBatch(int n, const char *const *tenants,
								   const char *const *skus, const int64 *qty,
								   InventoryCounter from, InventoryCounter to,
								   TimestampTz now);
extern int	InventorySlotLockSku(const char *tenant, const char *sku,
								 int64 *totals, void **state);
extern void InventorySlotSetAvailable(void *state, int nrows, int nkeep,
									  int64 new_total, TimestampTz now);
extern void InventorySlotGather(void *state, int nrows, int keep,
								TimestampTz now);

/* worker.c */
extern void InventoryRegisterWorker(void);
PGDLLEXPORT void InventoryWorkerMain(Datum main_arg);

#endif							/* PG_INVENTORY_H */
