/*-------------------------------------------------------------------------
 *
 * src/retention.c
 *		Retention of history (schema 0.5 on, README "Retention"):
 *		purge_history, which removes finished reservations with their
 *		lines, transitions and published events (optionally keeping one
 *		document of each in reservation_archive), and archive_ledger,
 *		which moves old ledger records into stock_ledger_archive.
 *		purge_published (outbox.c) is the third retention function.
 *		And the reservations' rings (0.9): the default of reservation.id
 *		(_reservation_id) and purge_history's removal of a ring at a time.
 *
 * From 0.9 reservation, reservation_line and reservation_transition are
 * partitioned into RESERVATION_RINGS rings by the reservation id modulo
 * RESERVATION_RINGS, and purge_history truncates a ring once every
 * reservation in it finished before the retention (InventoryPurgeRings with
 * history_rings, TruncateHistoryRing: why nothing is lost is there).  Before 0.9 (an old
 * schema under this library) it removes reservations row by row:
 *
 * purge_history runs two statements.  The first picks the oldest finished
 * reservations past the cut-off none of whose events is unpublished or
 * dead-lettered, and locks them FOR UPDATE SKIP LOCKED: a reservation
 * another transaction holds (a compensate, a replayed confirm, another
 * purge) is skipped, never waited for.  From then on nobody can change
 * them or add an event to them (every writer of a reservation's state,
 * lines, transitions and events holds its row lock: reservation.c), so the
 * second statement, whose snapshot is taken after the locks, sees all they
 * will ever have.  It checks each again, locks their events SKIP LOCKED
 * (a reservation with an event another transaction holds, such as
 * purge_published deleting it, is left for a later call), archives them
 * when asked, adds the units of the confirmed ones to purged_confirmed, and
 * deletes their events, transitions, lines and rows.
 *
 * Why purged_confirmed: a confirmed reservation's units stay in the SKU's
 * consumed counter for good, and check_invariants holds consumed equal to
 * the units of confirmed reservations; removing the reservation must not
 * break that, so its units are carried per (tenant, sku, location) and the
 * check adds them (invariants.c).  Only purge_history writes that table,
 * in (tenant, sku, location) order (lock order 4, pg_inventory.h): two
 * purges may wait there for each other's commit, never deadlock, and no
 * other call ever waits for a purge.
 *
 * archive_ledger moves records in one statement (DELETE ... RETURNING
 * into INSERT), so every snapshot sees each record in exactly one of the
 * two tables: check_invariants, which sums both in one statement, stays
 * exact, and restock and adjust, which look a key up in both in one
 * statement (ledger.c), still replay a moved record.  Records are moved
 * only when older than a day, so no call still in flight can be writing
 * the same key (which would otherwise find the key free in the ledger).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_inventory.h"
#include "statement.h"

PG_FUNCTION_INFO_V1(inventory_purge_history);
PG_FUNCTION_INFO_V1(inventory_archive_ledger);
PG_FUNCTION_INFO_V1(inventory_reservation_id);

/*
 * The reservations' rings (0.9): reservation, reservation_line and
 * reservation_transition are each partitioned by the reservation id modulo
 * RESERVATION_RINGS; the sequence inventory.reservation_ring names the
 * ring new ids end in.
 */
#define RESERVATION_RINGS 4

/* the top transaction (MyProc->lxid) whose current ring is ring_value */
static LocalTransactionId ring_lxid = InvalidLocalTransactionId;
static int16 ring_value = 0;

/* Most reservations or records one call removes or moves */
#define RETENTION_MAX_ROWS 1000000

/*
 * Reservation r is finished ("not pending": the table checks the states)
 * before cutoff, and none of its events is unpublished or dead-lettered.
 * OFFSET 0 keeps the event check a probe of outbox_reservation per
 * reservation (a subplan, not an anti join over every unpublished event),
 * so its cost does not grow with the outbox or a relay's backlog.
 */
#define FINISHED_BEFORE(cutoff) \
	"r.state <> 'pending' AND r.updated_at < " cutoff " " \
	"AND NOT EXISTS (SELECT 1 FROM inventory.outbox o " \
	"WHERE o.reservation_id = r.id AND o.published_at IS NULL OFFSET 0)"

/*
 * The ids of up to $2 finished reservations whose last change is before
 * $1 and whose events are all published, oldest first, locked (NULL: none);
 * those another transaction holds are skipped.
 */
static InventoryStatement pick_finished = {
	"pick finished reservations",
	"SELECT array_agg(c.id) FROM ("
	"SELECT r.id FROM inventory.reservation r WHERE " FINISHED_BEFORE("$1")
	" ORDER BY r.updated_at, r.id LIMIT $2 FOR UPDATE OF r SKIP LOCKED) c",
	2, {TIMESTAMPTZOID, INT4OID}
};

/*
 * Of the locked reservations $1: those still finished before $2 with only
 * published events, each of which this statement could lock (k), are
 * archived when $3 (archived_at $4), their confirmed units added to
 * purged_confirmed, and deleted with their events, transitions and lines.
 * The row count is the number of reservations deleted.
 */
static InventoryStatement purge_finished = {
	"purge finished reservations",
	"WITH r AS MATERIALIZED (SELECT r.id FROM inventory.reservation r "
	"WHERE r.id = ANY ($1) AND " FINISHED_BEFORE("$2") "), "
	"e AS MATERIALIZED (SELECT o.id FROM inventory.outbox o "
	"WHERE o.reservation_id IN (SELECT r.id FROM r) FOR UPDATE OF o SKIP LOCKED), "
	"k AS MATERIALIZED (SELECT x.id, x.state FROM inventory.reservation x "
	"JOIN r ON r.id = x.id WHERE NOT EXISTS (SELECT 1 FROM inventory.outbox o "
	"WHERE o.reservation_id = x.id AND NOT EXISTS (SELECT 1 FROM e WHERE e.id = o.id))), "
	"archived AS (INSERT INTO inventory.reservation_archive (reservation_id, tenant, "
	"request_key, state, finished_at, document, archived_at) "
	"SELECT x.id, x.tenant, x.request_key, x.state, x.updated_at, "
	"to_jsonb(x) || jsonb_build_object("
	"'lines', COALESCE((SELECT jsonb_agg(to_jsonb(l) - 'reservation_id' - 'tenant' "
	"ORDER BY l.sku, l.location NULLS FIRST) FROM inventory.reservation_line l "
	"WHERE l.reservation_id = x.id), '[]'::jsonb), "
	"'transitions', COALESCE((SELECT jsonb_agg(to_jsonb(t) - 'reservation_id' "
	"ORDER BY t.version) FROM inventory.reservation_transition t "
	"WHERE t.reservation_id = x.id), '[]'::jsonb)), $4 "
	"FROM inventory.reservation x JOIN k ON k.id = x.id WHERE $3), "
	"carried AS (INSERT INTO inventory.purged_confirmed AS p "
	"(tenant, sku, location, quantity, updated_at) "
	"SELECT l.tenant, l.sku, l.location, sum(l.quantity), $4 "
	"FROM inventory.reservation_line l JOIN k ON k.id = l.reservation_id "
	"WHERE k.state = 'confirmed' GROUP BY l.tenant, l.sku, l.location "
	"ORDER BY l.tenant, l.sku, l.location "
	"ON CONFLICT (tenant, sku, location) DO UPDATE "
	"SET quantity = p.quantity + excluded.quantity, updated_at = excluded.updated_at), "
	"gone_events AS (DELETE FROM inventory.outbox o USING k "
	"WHERE o.reservation_id = k.id), "
	"gone_log AS (DELETE FROM inventory.reservation_transition t USING k "
	"WHERE t.reservation_id = k.id), "
	"gone_lines AS (DELETE FROM inventory.reservation_line l USING k "
	"WHERE l.reservation_id = k.id) "
	"DELETE FROM inventory.reservation x USING k WHERE x.id = k.id",
	4, {INT8ARRAYOID, TIMESTAMPTZOID, BOOLOID, TIMESTAMPTZOID}
};

/*
 * Moves up to $2 ledger records made before $1, lowest id first, into the
 * archive; records another transaction holds are skipped.
 */
static InventoryStatement move_ledger = {
	"archive ledger records",
	"WITH g AS MATERIALIZED (SELECT g.id FROM inventory.stock_ledger g "
	"WHERE g.created_at < $1 ORDER BY g.id LIMIT $2 FOR UPDATE SKIP LOCKED), "
	"d AS (DELETE FROM inventory.stock_ledger x USING g WHERE x.id = g.id "
	"RETURNING x.id, x.tenant, x.sku, x.request_key, x.kind, x.delta, x.reason, "
	"x.available_after, x.actor, x.created_at, x.location) "
	"INSERT INTO inventory.stock_ledger_archive (id, tenant, sku, request_key, "
	"kind, delta, reason, available_after, actor, created_at, location) "
	"SELECT d.id, d.tenant, d.sku, d.request_key, d.kind, d.delta, d.reason, "
	"d.available_after, d.actor, d.created_at, d.location FROM d",
	2, {TIMESTAMPTZOID, INT4OID}
};

/*
 * The reservations' rings (0.9).  Each statement names its ring as "r.id
 * % 4 = $1", the partition key's expression, so that only the ring's
 * partition is read (runtime pruning).
 */

/*
 * the current ring, as _reservation_id reads it (0 when the sequence was
 * never set or was restarted)
 */
static InventoryStatement history_ring_current = {
	"read the reservations' current ring",
	"SELECT COALESCE(pg_catalog.pg_sequence_last_value("
	"'inventory.reservation_ring'::regclass), 0)::int4",
	0, {InvalidOid}
};

/*
 * Of ring $1: whether it holds any reservation, whether a pending one, the
 * latest change of its finished ones (NULL: none), and when its oldest
 * reservation (lowest id) was made.  Each a probe of one index of the
 * ring's partition (reservation_pending_due, reservation_finished, the
 * primary key).
 */
static InventoryStatement history_ring_state = {
	"read a reservation ring's state",
	"SELECT EXISTS (SELECT 1 FROM inventory.reservation r WHERE r.id % 4 = $1), "
	"EXISTS (SELECT 1 FROM inventory.reservation r WHERE r.id % 4 = $1 "
	"AND r.state = 'pending'), "
	"(SELECT max(r.updated_at) FROM inventory.reservation r WHERE r.id % 4 = $1 "
	"AND r.state <> 'pending'), "
	"(SELECT r.created_at FROM inventory.reservation r WHERE r.id % 4 = $1 "
	"ORDER BY r.id LIMIT 1)",
	1, {INT8OID}, NULL, true
};

/*
 * the archive document of reservation x of ring $1 (as purge_finished
 * writes it), its lines and transitions read in the ring's partitions
 */
#define ARCHIVE_DOCUMENT \
	"to_jsonb(x) || jsonb_build_object(" \
	"'lines', COALESCE((SELECT jsonb_agg(to_jsonb(l) - 'reservation_id' - 'tenant' " \
	"ORDER BY l.sku, l.location NULLS FIRST) FROM inventory.reservation_line l " \
	"WHERE l.reservation_id = x.id AND l.reservation_id % 4 = $1), '[]'::jsonb), " \
	"'transitions', COALESCE((SELECT jsonb_agg(to_jsonb(t) - 'reservation_id' " \
	"ORDER BY t.version) FROM inventory.reservation_transition t " \
	"WHERE t.reservation_id = x.id AND t.reservation_id % 4 = $1), '[]'::jsonb))"

/*
 * Archives up to $2 reservations of ring $1 not archived yet, lowest id
 * first, archived_at $3; the row count is how many.
 */
static InventoryStatement history_ring_archive = {
	"archive a reservation ring",
	"INSERT INTO inventory.reservation_archive (reservation_id, tenant, "
	"request_key, state, finished_at, document, archived_at) "
	"SELECT x.id, x.tenant, x.request_key, x.state, x.updated_at, "
	ARCHIVE_DOCUMENT ", $3 FROM inventory.reservation x WHERE x.id % 4 = $1 "
	"AND NOT EXISTS (SELECT 1 FROM inventory.reservation_archive a "
	"WHERE a.reservation_id = x.id) ORDER BY x.id LIMIT $2",
	3, {INT8OID, INT4OID, TIMESTAMPTZOID}, NULL, true
};

/*
 * The documents of reservations of ring $1 that changed since they were
 * archived (a compensate) are written again (archived_at $2)
 */
static InventoryStatement history_ring_rearchive = {
	"archive a reservation ring again",
	"UPDATE inventory.reservation_archive a SET state = x.state, "
	"finished_at = x.updated_at, document = " ARCHIVE_DOCUMENT ", archived_at = $2 "
	"FROM inventory.reservation x WHERE x.id % 4 = $1 AND a.reservation_id = x.id "
	"AND a.finished_at IS DISTINCT FROM x.updated_at",
	2, {INT8OID, TIMESTAMPTZOID}, NULL, true
};

/* whether ring $1 holds a reservation not archived */
static InventoryStatement history_ring_unarchived = {
	"look for a reservation not archived",
	"SELECT EXISTS (SELECT 1 FROM inventory.reservation x WHERE x.id % 4 = $1 "
	"AND NOT EXISTS (SELECT 1 FROM inventory.reservation_archive a "
	"WHERE a.reservation_id = x.id))",
	1, {INT8OID}, NULL, true
};

/* how many reservations ring $1 holds */
static InventoryStatement history_ring_count = {
	"count a reservation ring",
	"SELECT count(*)::int8 FROM inventory.reservation r WHERE r.id % 4 = $1",
	1, {INT8OID}
};

/*
 * The units of ring $1's confirmed reservations, added to purged_confirmed
 * (updated_at $2) in (tenant, sku, location) order (lock order 4)
 */
static InventoryStatement history_ring_carry = {
	"carry a reservation ring's confirmed units",
	"INSERT INTO inventory.purged_confirmed AS p "
	"(tenant, sku, location, quantity, updated_at) "
	"SELECT l.tenant, l.sku, l.location, sum(l.quantity), $2 "
	"FROM inventory.reservation_line l JOIN inventory.reservation x "
	"ON x.id = l.reservation_id AND x.id % 4 = $1 "
	"WHERE l.reservation_id % 4 = $1 AND x.state = 'confirmed' "
	"GROUP BY l.tenant, l.sku, l.location ORDER BY l.tenant, l.sku, l.location "
	"ON CONFLICT (tenant, sku, location) DO UPDATE "
	"SET quantity = p.quantity + excluded.quantity, updated_at = excluded.updated_at",
	2, {INT8OID, TIMESTAMPTZOID}
};

/* makes ring $1 current */
static InventoryStatement history_ring_set = {
	"move the reservations' current ring",
	"SELECT pg_catalog.setval('inventory.reservation_ring', $1, true)",
	1, {INT8OID}
};

/*
 * The partitions of ring k, in the order calls lock them: reservations,
 * lines, log
 */
static const char *const ring_tables[] = {
	"reservation_ring_%d", "reservation_line_ring_%d",
	"reservation_transition_ring_%d"
};

#define RING_TABLES lengthof(ring_tables)

/* Whether ring's state (history_ring_state's result) lets it go before cutoff */
static bool
RingFinished(TimestampTz cutoff, bool *has_rows)
{
	bool		isnull;
	Datum		last;

	*has_rows = DatumGetBool(InventoryResultDatum(0, 1, &isnull));
	if (!*has_rows)
		return false;
	if (DatumGetBool(InventoryResultDatum(0, 2, &isnull)))
		return false;			/* a pending reservation */
	last = InventoryResultDatum(0, 3, &isnull);
	return !isnull && DatumGetTimestampTz(last) < cutoff;
}

/*
 * Whether a transaction other than this one that began HISTORY_LOCK_OLD_MS
 * ago or earlier (or a prepared transaction) holds a lock on one of the
 * relations $1: one the purge would wait for beyond its lock_timeout
 */
static InventoryStatement history_ring_old_holder = {
	"look for an old holder of a reservation ring",
	"SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_locks l "
	"LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid "
	"WHERE l.locktype = 'relation' AND l.database = "
	"(SELECT d.oid FROM pg_catalog.pg_database d "
	"WHERE d.datname = pg_catalog.current_database()) "
	"AND l.relation = ANY ($1) AND l.granted "
	"AND l.pid IS DISTINCT FROM pg_catalog.pg_backend_pid() "
	"AND (l.pid IS NULL OR a.xact_start IS NULL "
	"OR a.xact_start < pg_catalog.clock_timestamp() - $2))",
	2, {OIDARRAYOID, INTERVALOID}
};

/*
 * Taking a ring: HISTORY_LOCK_TRIES conditional tries 1 ms apart (no call
 * waits behind them); then, unless a transaction older than
 * HISTORY_LOCK_OLD_MS holds the ring, a wait in the lock queue of at most
 * HISTORY_LOCK_TIMEOUT_MS (calls that start meanwhile wait behind it), since
 * under steady load some call always holds every ring (a reserve looks its
 * key up in all of them) and conditional tries alone never succeed.  The
 * same bound for both: a holder younger than it is waited for at most as
 * long, one older (a long transaction) is not waited for at all.
 */
#define HISTORY_LOCK_TRIES 5
#define HISTORY_LOCK_OLD_MS 200
#define HISTORY_LOCK_TIMEOUT_MS 200

/*
 * After a wait in the lock queue that timed out, this backend waits in the
 * queue again only HISTORY_QUEUE_PAUSE_MS later (conditional tries go on
 * meanwhile): a purge called in a tight loop would otherwise stall the
 * calls again and again behind holders that outlive the wait.
 */
#define HISTORY_QUEUE_PAUSE_MS 1000
static TimestampTz history_queue_after = 0;

/*
 * Whether the purge may wait in the lock queue now: not while it holds a
 * ring it truncated in this call (a call holding the ring it queues for
 * may be waiting for the truncated one: a deadlock), nor during a pause
 */
static bool history_holds_ring = false;

/*
 * LockHistoryRing
 *		Takes the ring's three partitions rels exclusively, in the order
 *		calls lock them.  Returns false when a transaction older than
 *		HISTORY_LOCK_OLD_MS holds one, when this call already truncated a
 *		ring, or during a pause after a timed-out wait (nothing waited for
 *		but the conditional tries); raises 55P03 when the wait passes
 *		HISTORY_LOCK_TIMEOUT_MS (or a lower lock_timeout of the caller):
 *		run it in a subtransaction.
 */
static bool
LockHistoryRing(const Oid *rels)
{
	int			i;
	int			k;

	for (i = 0; i < (int) RING_TABLES; i++)
	{
		bool		got = false;

		for (k = 0; k < HISTORY_LOCK_TRIES && !got; k++)
		{
			got = ConditionalLockRelationOid(rels[i], AccessExclusiveLock);
			if (!got)
			{
				(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 1L, PG_WAIT_EXTENSION);
				ResetLatch(MyLatch);
				CHECK_FOR_INTERRUPTS();
			}
		}
		if (!got)
		{
			Datum		values[2];
			Datum	   *oids = palloc(sizeof(Datum) * RING_TABLES);
			bool		isnull;
			int			level;
			char		timeout[32];

			for (k = 0; k < (int) RING_TABLES; k++)
				oids[k] = ObjectIdGetDatum(rels[k]);
			values[0] = PointerGetDatum(construct_array(oids, RING_TABLES, OIDOID,
														sizeof(Oid), true,
														TYPALIGN_INT));
			values[1] = DirectFunctionCall3(interval_in,
											CStringGetDatum(CppAsString2(HISTORY_LOCK_OLD_MS) " ms"),
											ObjectIdGetDatum(InvalidOid),
											Int32GetDatum(-1));
			if (history_holds_ring || GetCurrentTimestamp() < history_queue_after)
				return false;
			InventoryRun(&history_ring_old_holder, values, NULL, SPI_OK_SELECT);
			if (DatumGetBool(InventoryResultDatum(0, 1, &isnull)))
				return false;
			snprintf(timeout, sizeof(timeout), "%d",
					 LockTimeout > 0 ? Min(LockTimeout, HISTORY_LOCK_TIMEOUT_MS) :
					 HISTORY_LOCK_TIMEOUT_MS);
			/* undone below, or by the subtransaction's abort */
			level = NewGUCNestLevel();
			(void) set_config_option("lock_timeout", timeout, PGC_USERSET,
									 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
			LockRelationOid(rels[i], AccessExclusiveLock);
			AtEOXact_GUC(true, level);
		}
	}
	return true;
}

/*
 * Runs work(arg) in a subtransaction (InventorySubtransaction).  These
 * errors inside undo it and count as false (the ring is left for a later
 * call): a lock timeout (55P03, and then the queue's pause starts or
 * doubles), a deadlock (40P01: the purge's wait in the queue was part of
 * one, with deadlock_timeout below its wait), and the calling statement's
 * own use of a ring (55006: TRUNCATE refuses a table the same session
 * reads, as in SELECT purge_history(...), (SELECT ... FROM reservation)).
 * Any other error is raised.
 */
static bool
HistoryRingSubtransaction(bool (*work) (void *arg), void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile bool kept = false;

	PG_TRY();
	{
		kept = InventorySubtransaction(work, arg);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE &&
			edata->sqlerrcode != ERRCODE_T_R_DEADLOCK_DETECTED &&
			edata->sqlerrcode != ERRCODE_OBJECT_IN_USE)
			PG_RE_THROW();
		FlushErrorState();
		elog(DEBUG1, "pg_inventory: purge_history left a ring: %s", edata->message);
		if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
			history_queue_after = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
															  HISTORY_QUEUE_PAUSE_MS);
		FreeErrorData(edata);
		kept = false;
	}
	PG_END_TRY();
	return kept;
}

/* What TruncateHistoryRingWork does to one ring, and what it returns */
typedef struct HistoryRingTruncation
{
	int			ring;
	Oid			rels[RING_TABLES];	/* its partitions, in lock order */
	TimestampTz cutoff;
	TimestampTz now;
	bool		archive;
	bool		locked;			/* out (the probe): the locks were got */
	int64		removed;		/* out: reservations removed */
} HistoryRingTruncation;

/*
 * The probe of TruncateHistoryRing: whether the ring's locks can be got
 * now; never kept (its subtransaction's end releases them)
 */
static bool
ProbeHistoryRingWork(void *arg)
{
	HistoryRingTruncation *t = (HistoryRingTruncation *) arg;

	t->locked = LockHistoryRing(t->rels);
	return false;
}

/*
 * The work of TruncateHistoryRing in its subtransaction: kept (true) only
 * when the ring was truncated.
 */
static bool
TruncateHistoryRingWork(void *arg)
{
	HistoryRingTruncation *t = (HistoryRingTruncation *) arg;
	Datum		values[2];
	bool		has_rows;
	char	   *sql;

	values[0] = Int64GetDatum((int64) t->ring);
	values[1] = TimestampTzGetDatum(t->now);
	/*
	 * the work that reads the whole ring, before its locks, so that calls
	 * never wait behind it: the documents of reservations changed since
	 * they were archived, the count, the confirmed units carried
	 */
	if (t->archive)
		InventoryRun(&history_ring_rearchive, values, NULL, SPI_OK_UPDATE);
	InventoryRun(&history_ring_count, values, NULL, SPI_OK_SELECT);
	t->removed = InventoryResultInt64(0, 1);
	InventoryRun(&history_ring_carry, values, NULL, SPI_OK_INSERT);
	/* the locks (released with the subtransaction when it is not kept) */
	if (!LockHistoryRing(t->rels))
		return false;
	/*
	 * again under the locks: a change committed since the reads above (a
	 * compensate; every change sets updated_at to the clock, not before
	 * cutoff) keeps the ring, and the subtransaction is undone with what
	 * it wrote; a writer not yet committed held a lock until it ended
	 */
	InventoryRun(&history_ring_state, values, NULL, SPI_OK_SELECT);
	if (!RingFinished(t->cutoff, &has_rows) && has_rows)
		return false;
	/*
	 * (every reservation was archived before: a row inserted since, by a
	 * writer whose transaction kept an older current ring, is pending or
	 * changed after cutoff, which the check above refuses)
	 */
	sql = psprintf("TRUNCATE inventory.reservation_ring_%d, "
				   "inventory.reservation_line_ring_%d, inventory.reservation_transition_ring_%d",
				   t->ring, t->ring, t->ring);
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "pg_inventory: could not truncate ring %d of the reservations",
			 t->ring);
	pfree(sql);
	return true;
}

/*
 * TruncateHistoryRing
 *		Removes ring (not the current one), every reservation of which
 *		finished before cutoff.  When archive, first archives up to
 *		*archive_left of its reservations not archived yet (the call's
 *		max_rows, less what it archived in other rings; kept whatever
 *		happens next: a document is a copy, written again below if its
 *		reservation changes) and goes no further while one is left.  Then
 *		it probes the ring's locks (LockHistoryRing in a subtransaction
 *		that ends at once: no point reading a whole ring a transaction
 *		keeps), and, in a second subtransaction: writes again the
 *		documents of reservations changed since archived, counts the ring
 *		and carries the units of its confirmed reservations into
 *		purged_confirmed, all before locking anything; takes the ring's
 *		three partitions exclusively (LockHistoryRing: a transaction that
 *		read or wrote a reservation of the ring holds a lock on them until
 *		it ends); checks again that no reservation in it is pending or
 *		changed at or after cutoff; truncates the three partitions.  Any
 *		miss (a lock not got, a change since) undoes the subtransaction.
 *		Returns how many reservations it removed, or -1 with nothing
 *		removed.
 *
 * Why nothing is lost: once the locks are ours every change in the ring
 * has committed or rolled back, and the check, which runs on a snapshot
 * taken after the locks (READ COMMITTED: the caller checks), sees every
 * committed one; the reads before the locks saw a ring that no change
 * committed since, or the check finds the change (its updated_at).  The
 * locks are held for the check and the TRUNCATE only (and to the commit),
 * so the calls that wait behind them wait milliseconds.
 */
static int64
TruncateHistoryRing(int ring, TimestampTz cutoff, TimestampTz now,
					int32 *archive_left, bool archive)
{
	HistoryRingTruncation t;
	Datum		values[3];
	int			i;

	values[0] = Int64GetDatum((int64) ring);
	if (archive)
	{
		bool		isnull;

		if (*archive_left > 0)
		{
			values[1] = Int32GetDatum(*archive_left);
			values[2] = TimestampTzGetDatum(now);
			*archive_left -= (int32) InventoryRun(&history_ring_archive, values, NULL,
												  SPI_OK_INSERT);
		}
		InventoryRun(&history_ring_unarchived, values, NULL, SPI_OK_SELECT);
		if (DatumGetBool(InventoryResultDatum(0, 1, &isnull)))
			return -1;
	}
	t.ring = ring;
	for (i = 0; i < (int) RING_TABLES; i++)
	{
		char		name[NAMEDATALEN];

		snprintf(name, sizeof(name), ring_tables[i], ring);
		t.rels[i] = get_relname_relid(name, get_namespace_oid("inventory", false));
		if (!OidIsValid(t.rels[i]))
			elog(ERROR, "pg_inventory: the ring's partition inventory.%s is missing",
				 name);
	}
	t.cutoff = cutoff;
	t.now = now;
	t.archive = archive;
	t.locked = false;
	t.removed = 0;
	(void) HistoryRingSubtransaction(ProbeHistoryRingWork, &t);
	if (!t.locked)
		return -1;
	if (!HistoryRingSubtransaction(TruncateHistoryRingWork, &t))
		return -1;
	/* taken: the call holds this ring now, until its transaction ends */
	history_holds_ring = true;
	return t.removed;
}

/*
 * InventoryPurgeRings
 *		The purge of a table kept in rings (ops): every ring but the
 *		current one that is due (ops->due; next is the ring after the
 *		current one) is emptied (ops->empty); then, when the next ring is
 *		empty and the current one old enough (ops->aged), the next ring
 *		becomes current; twice, so that a retention of 0 also empties the
 *		ring that was current.  While another purge of the table holds its
 *		purge lock (advisory, objsubid ops->purge_lock, to its transaction's
 *		end), it does nothing: two could each hold one ring exclusively and
 *		wait for the other's.  Returns how many rows it removed.
 */
int64
InventoryPurgeRings(const InventoryRingOps *ops, void *arg)
{
	int64		removed = 0;
	int			cur;
	int			round;
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, 0, ops->purge_lock);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return 0;
	InventoryRun(ops->current, NULL, NULL, SPI_OK_SELECT);
	cur = (int) InventoryResultInt64(0, 1);
	for (round = 0; round < 2; round++)
	{
		int			next = (cur + 1) % ops->rings;
		bool		next_empty = true;
		int			k;
		Datum		value;

		for (k = 1; k < ops->rings; k++)
		{
			int			ring = (cur + k) % ops->rings;
			bool		has_rows;
			int64		n;

			if (!ops->due(ring, next, &has_rows, arg))
			{
				if (has_rows && ring == next)
					next_empty = false;
				continue;
			}
			n = ops->empty(ring, cur, arg);
			if (n < 0)
			{
				if (ring == next)
					next_empty = false;
				continue;
			}
			removed += n;
		}
		if (!next_empty || !ops->aged(cur, arg))
			break;
		value = Int64GetDatum((int64) next);
		InventoryRun(ops->set, &value, NULL, SPI_OK_SELECT);
		cur = next;
	}
	return removed;
}

/* What purge_history on the rings works with */
typedef struct HistoryPurge
{
	TimestampTz cutoff;			/* finished before it: due */
	TimestampTz half_cutoff;	/* the current ring made before it: aged */
	TimestampTz now;
	int32		archive_left;	/* documents this call may still write */
	bool		archive;
} HistoryPurge;

/* ops->due of the reservations' rings: every reservation finished */
static bool
HistoryRingDue(int ring, int next, bool *has_rows, void *arg)
{
	HistoryPurge *h = (HistoryPurge *) arg;
	Datum		value = Int64GetDatum((int64) ring);

	InventoryRun(&history_ring_state, &value, NULL, SPI_OK_SELECT);
	return RingFinished(h->cutoff, has_rows);
}

/* ops->empty of the reservations' rings */
static int64
HistoryRingEmpty(int ring, int cur, void *arg)
{
	HistoryPurge *h = (HistoryPurge *) arg;

	return TruncateHistoryRing(ring, h->cutoff, h->now, &h->archive_left, h->archive);
}

/* ops->aged of the reservations' rings: its oldest made before half_cutoff */
static bool
HistoryRingAged(int cur, void *arg)
{
	HistoryPurge *h = (HistoryPurge *) arg;
	Datum		value = Int64GetDatum((int64) cur);
	Datum		first;
	bool		isnull;

	InventoryRun(&history_ring_state, &value, NULL, SPI_OK_SELECT);
	first = InventoryResultDatum(0, 4, &isnull);
	return !isnull && DatumGetTimestampTz(first) < h->half_cutoff;
}

static const InventoryRingOps history_rings = {
	RESERVATION_RINGS, INVENTORY_LOCK_HISTORY_PURGE,
	&history_ring_current, &history_ring_set,
	HistoryRingDue, HistoryRingEmpty, HistoryRingAged
};

/* now - older_than, as a timestamptz Datum */
static Datum
Cutoff(TimestampTz now, Interval *older_than)
{
	return DirectFunctionCall2(timestamptz_mi_interval, TimestampTzGetDatum(now),
							   IntervalPGetDatum(older_than));
}

/*
 * inventory_purge_history
 *		purge_history(older_than interval DEFAULT '90 days',
 *					  max_rows integer DEFAULT 10000,
 *					  archive boolean DEFAULT false) RETURNS integer
 *
 * Retention of finished reservations (every state but pending) whose last
 * change (updated_at) is more than older_than (0 to 10 years) before the
 * pg_inventory clock, with their lines and transitions; the units of
 * confirmed ones are added to purged_confirmed.  0.9 (the reservations'
 * rings): removes whole rings (InventoryPurgeRings with history_rings;
 * one call may empty several and move the current ring on), writing at
 * most max_rows (1 to 1000000) archive documents a call when archive; must
 * run at READ COMMITTED.  Before 0.9: deletes at most max_rows such
 * reservations none of whose events is unpublished or dead-lettered,
 * oldest first, with their published events, each first kept as one
 * document in reservation_archive when archive, skipping those another
 * transaction holds.  Returns how many reservations it removed.
 * Errors: 22023 bad argument, 25001 (0.9) in a REPEATABLE READ or
 * SERIALIZABLE transaction, 0A000 schema before 0.5.
 */
Datum
inventory_purge_history(PG_FUNCTION_ARGS)
{
	Interval   *older_than = InventoryIntervalArg(fcinfo, 0, "older_than", "0",
												  true, "10 years");
	int32		max_rows = InventoryIntArg(fcinfo, 1, "max_rows", 1,
										   RETENTION_MAX_ROWS);
	bool		archive;
	InventoryCall call;
	TimestampTz now;
	Datum		values[4];
	bool		isnull;
	int32		removed = 0;

	InventoryRequireArg(fcinfo, 2, "archive");
	archive = PG_GETARG_BOOL(2);

	InventoryBeginCall(fcinfo, &call, NULL);
	InventoryRequireLocated(&call, "inventory.purge_history");
	now = InventoryNow();
	if (call.ringed)
	{
		Interval   *half;
		HistoryPurge h;
		int64		n;

		if (IsolationUsesXactSnapshot())
			ereport(ERROR,
					(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
					 errmsg("purge_history must run at READ COMMITTED"),
					 errdetail("It empties a ring of the reservations after checking, under its locks, every reservation committed in it, which a transaction snapshot older than those locks would not all see."),
					 errhint("Call it in a transaction of its own at the default isolation level, as the expiry worker does.")));
		half = DatumGetIntervalP(DirectFunctionCall2(interval_div,
													 IntervalPGetDatum(older_than),
													 Float8GetDatum(2.0)));
		history_holds_ring = false;
		h.cutoff = DatumGetTimestampTz(Cutoff(now, older_than));
		h.half_cutoff = DatumGetTimestampTz(Cutoff(now, half));
		h.now = now;
		h.archive_left = max_rows;
		h.archive = archive;
		n = InventoryPurgeRings(&history_rings, &h);
		InventoryEndCall(&call);
		PG_RETURN_INT32((int32) Min(n, (int64) PG_INT32_MAX));
	}
	values[0] = Cutoff(now, older_than);
	values[1] = Int32GetDatum(max_rows);
	InventoryRun(&pick_finished, values, NULL, SPI_OK_SELECT);
	values[0] = InventoryResultDatum(0, 1, &isnull);
	if (!isnull)
	{
		values[1] = Cutoff(now, older_than);
		values[2] = BoolGetDatum(archive);
		values[3] = TimestampTzGetDatum(now);
		removed = (int32) InventoryRun(&purge_finished, values, NULL,
									   SPI_OK_DELETE);
	}
	InventoryEndCall(&call);
	PG_RETURN_INT32(removed);
}

/*
 * inventory_archive_ledger
 *		archive_ledger(older_than interval DEFAULT '365 days',
 *					   max_rows integer DEFAULT 10000) RETURNS integer
 *
 * Moves at most max_rows (1 to 1000000) ledger records made more than
 * older_than (1 day to 10 years) before the pg_inventory clock, lowest id
 * first, from stock_ledger into stock_ledger_archive, unchanged.  Skips
 * records another transaction holds.  Returns how many it moved.
 * Errors: 22023 bad argument, 0A000 schema before 0.5.
 */
Datum
inventory_archive_ledger(PG_FUNCTION_ARGS)
{
	Interval   *older_than = InventoryIntervalArg(fcinfo, 0, "older_than",
												  "1 day", true, "10 years");
	int32		max_rows = InventoryIntArg(fcinfo, 1, "max_rows", 1,
										   RETENTION_MAX_ROWS);
	InventoryCall call;
	Datum		values[2];
	int32		moved;

	InventoryBeginCall(fcinfo, &call, NULL);
	InventoryRequireLocated(&call, "inventory.archive_ledger");
	values[0] = Cutoff(InventoryNow(), older_than);
	values[1] = Int32GetDatum(max_rows);
	moved = (int32) InventoryRun(&move_ledger, values, NULL, SPI_OK_INSERT);
	InventoryEndCall(&call);
	PG_RETURN_INT32(moved);
}

/*
 * inventory_reservation_id
 *		_reservation_id(id_sequence regclass, ring_sequence regclass)
 *		RETURNS bigint: the default of reservation.id (0.9), called with
 *		inventory.reservation_id_seq and inventory.reservation_ring
 *
 * The next value of id_sequence times RESERVATION_RINGS plus the current
 * ring: ring_sequence's last value (0 when never set), read at the first
 * reservation of a top transaction and kept for its later ones, as
 * _outbox_ring does.  So the id names its ring (id % 4) and ids grow in the
 * order they are drawn.  Any ring is safe to write to: purge_history
 * truncates a ring only while it holds the ring's partitions exclusively,
 * so never under a writer that has not committed, and only when every
 * reservation in it finished before the retention.  Runs as the caller of
 * the INSERT (the extension's owner inside reserve).  Errors: those of
 * nextval (42501 without USAGE or UPDATE on the sequence); 42501 without
 * SELECT or USAGE on the ring sequence; 22003 when the id would pass the
 * largest bigint.
 */
Datum
inventory_reservation_id(PG_FUNCTION_ARGS)
{
	int64		n;

	if (ring_lxid != MyProc->lxid)
	{
		bool		isnull;
		int64		ring = InventorySequenceLastValue(PG_GETARG_OID(1), &isnull);

		ring_value = (int16) ((ring >= 0 && ring < RESERVATION_RINGS) ? ring : 0);
		ring_lxid = MyProc->lxid;
	}
	n = nextval_internal(PG_GETARG_OID(0), true);
	if (n < 0 || n > (PG_INT64_MAX - (RESERVATION_RINGS - 1)) / RESERVATION_RINGS)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("reservation id out of range: sequence value " INT64_FORMAT " times %d",
						n, RESERVATION_RINGS)));
	PG_RETURN_INT64(n * RESERVATION_RINGS + ring_value);
}
