/*-------------------------------------------------------------------------
 *
 * src/pg_inventory.c
 *		Module entry: settings (GUCs), the clock, and the expiry worker's
 *		registration.
 *
 * The clock (README "Time") is the server's clock at the moment of
 * the check, GetCurrentTimestamp(), not the transaction start.  The
 * superuser-only setting pg_inventory.frozen_now pins it for tests.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "pg_inventory.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static char *frozen_now_setting = NULL;
static bool frozen_now_active = false;
static TimestampTz frozen_now_value = 0;

char	   *inventory_worker_database = NULL;
int			inventory_worker_interval_ms = 1000;
int			inventory_worker_batch_size = 1000;
static int	inventory_test_pause_lock = 0;
static char *inventory_test_fault = NULL;
int			inventory_outbox_retention_s = 7 * 24 * 3600;
int			inventory_history_retention_s = 0;
int			inventory_auto_slots = 64;
int			inventory_auto_slots_samples = 3;
int			inventory_auto_slots_interval_ms = 250;
int			inventory_auto_slots_idle_s = 600;

/*
 * check_frozen_now
 *		Parses pg_inventory.frozen_now as a timestamptz when it is set, so a
 *		bad value is refused by SET itself.  Empty means the real clock.
 *		Only an explicit instant is accepted: the special words now, today,
 *		tomorrow, yesterday, epoch, infinity, -infinity and allballs are
 *		refused wherever they appear (now would pin the moment of the SET,
 *		infinity no instant at all).
 *		Uses the datetime parser's error codes rather than timestamptz_in,
 *		which would throw inside a check hook.
 */
static bool
check_frozen_now(char **newval, void **extra, GucSource source)
{
	char		workbuf[MAXDATELEN + MAXDATEFIELDS];
	char	   *field[MAXDATEFIELDS];
	int			ftype[MAXDATEFIELDS];
	int			nf;
	int			dtype;
	int			tz;
	struct pg_tm tt;
	fsec_t		fsec;
	TimestampTz result;
	TimestampTz *saved;
	int			dterr;
	int			i;
	size_t		w;
	static const char *const special_words[] = {
		"now", "today", "tomorrow", "yesterday", "epoch", "infinity",
		"-infinity", "allballs"
	};

	if (*newval == NULL || (*newval)[0] == '\0')
	{
		*extra = NULL;
		return true;
	}
	if (strlen(*newval) >= MAXDATELEN)
	{
		GUC_check_errdetail("The value is too long for a timestamp.");
		return false;
	}
	dterr = ParseDateTime(*newval, workbuf, sizeof(workbuf), field, ftype,
						  MAXDATEFIELDS, &nf);
	/* a special word is no pinned instant: "now" is the moment of SET */
	for (i = 0; dterr == 0 && i < nf; i++)
		for (w = 0; w < lengthof(special_words); w++)
			if (pg_strcasecmp(field[i], special_words[w]) == 0)
			{
				GUC_check_errdetail("\"%s\" is not an explicit timestamp.",
									special_words[w]);
				GUC_check_errhint("Give a date and time with a time zone, e.g. '2026-08-01 12:00:00+00', or '' for the real clock.");
				return false;
			}
	if (dterr == 0)
		dterr = DecodeDateTime(field, ftype, nf, &dtype, &tt, &fsec, &tz);
	if (dterr != 0 || dtype != DTK_DATE || tm2timestamp(&tt, fsec, &tz, &result) != 0)
	{
		GUC_check_errdetail("pg_inventory.frozen_now must be a timestamp with time zone, or empty for the real clock.");
		GUC_check_errhint("Give a date and time with a time zone, e.g. '2026-08-01 12:00:00+00'.");
		return false;
	}
	saved = malloc(sizeof(TimestampTz));
	if (saved == NULL)
		return false;
	*saved = result;
	*extra = saved;
	return true;
}

static void
assign_frozen_now(const char *newval, void *extra)
{
	frozen_now_active = (extra != NULL);
	if (extra != NULL)
		frozen_now_value = *(TimestampTz *) extra;
}

/*
 * InventoryNow
 *		The pg_inventory clock: pg_inventory.frozen_now when set, else the
 *		current time (GetCurrentTimestamp, read at each call).
 */
TimestampTz
InventoryNow(void)
{
	return frozen_now_active ? frozen_now_value : GetCurrentTimestamp();
}

/*
 * InventoryTestPause
 *		The fault-injection pause point: with pg_inventory.test_pause_lock
 *		set, waits until a shared advisory lock on that key can be taken
 *		(a test holds it exclusively to stop the call here), then lets it go.
 *		Called while the caller holds its stock row locks and has written
 *		part of its change.  Does nothing when the setting is 0.
 */
void
InventoryTestPause(void)
{
	if (inventory_test_pause_lock == 0)
		return;
	DirectFunctionCall1(pg_advisory_lock_shared_int8,
						Int64GetDatum((int64) inventory_test_pause_lock));
	DirectFunctionCall1(pg_advisory_unlock_shared_int8,
						Int64GetDatum((int64) inventory_test_pause_lock));
}

/*
 * InventoryFaultPoint
 *		The fault-injection point named step: with pg_inventory.test_fault
 *		set to "step" or "step:CODE", raises an error there.  CODE is a
 *		SQLSTATE (default XX000) or "cancel", which raises PostgreSQL's own
 *		query cancel (57014) the way a pg_cancel_backend() does.  The steps
 *		are "begin" (the caller checked, running as the owner), "slot_take"
 *		(inside the internal subtransaction of the slot fast path),
 *		"slot_wait" (inside the one of the wait for one slot, reached when
 *		the fast path took nothing), "hold",
 *		"records", "ledger", "expire" and "end" (before switching back).
 *		Tests use it to prove that an error at any step, caught or not,
 *		leaves the caller's role and transaction as they were.  Does nothing
 *		when the setting is empty.
 */
void
InventoryFaultPoint(const char *step)
{
	size_t		len;
	const char *code;

	if (inventory_test_fault == NULL || inventory_test_fault[0] == '\0')
		return;
	len = strlen(step);
	if (strncmp(inventory_test_fault, step, len) != 0 ||
		(inventory_test_fault[len] != '\0' && inventory_test_fault[len] != ':'))
		return;
	code = inventory_test_fault[len] == ':' ? inventory_test_fault + len + 1 : "XX000";
	if (strcmp(code, "cancel") == 0)
	{
		QueryCancelPending = true;
		InterruptPending = true;
		CHECK_FOR_INTERRUPTS();
	}
	ereport(ERROR,
			(errcode(strlen(code) == 5 ?
					 MAKE_SQLSTATE(code[0], code[1], code[2], code[3], code[4]) :
					 ERRCODE_INTERNAL_ERROR),
			 errmsg("pg_inventory fault injected at step \"%s\"", step)));
}

/* Accepts "", "step" or "step:CODE" with CODE a SQLSTATE or "cancel". */
static bool
check_test_fault(char **newval, void **extra, GucSource source)
{
	const char *colon;

	if (*newval == NULL || (*newval)[0] == '\0')
		return true;
	colon = strchr(*newval, ':');
	if (colon != NULL && strcmp(colon + 1, "cancel") != 0 &&
		(strlen(colon + 1) != 5 ||
		 strspn(colon + 1, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") != 5))
	{
		GUC_check_errdetail("pg_inventory.test_fault must be STEP or STEP:CODE, CODE a five-character SQLSTATE or \"cancel\".");
		return false;
	}
	return true;
}

void
_PG_init(void)
{
	DefineCustomStringVariable("pg_inventory.frozen_now",
							   "Pins the pg_inventory clock to this timestamp (tests only).",
							   "An explicit timestamp with time zone; empty means the server's real clock. "
							   "Special values such as now or infinity are refused. Only superusers can set it.",
							   &frozen_now_setting,
							   "",
							   PGC_SUSET,
							   0,
							   check_frozen_now,
							   assign_frozen_now,
							   NULL);
	/*
	 * A PGC_POSTMASTER setting can only be defined while preloading; without
	 * preloading there is no worker, and everything else works as usual.
	 */
	if (process_shared_preload_libraries_in_progress)
		DefineCustomStringVariable("pg_inventory.worker_database",
								   "Database in which the expiry worker runs expire_due.",
								   "Empty disables the worker. Needs pg_inventory in shared_preload_libraries.",
								   &inventory_worker_database,
								   "",
								   PGC_POSTMASTER,
								   0,
								   NULL, NULL, NULL);
	DefineCustomIntVariable("pg_inventory.worker_interval",
							"Time between two expiry passes of the worker.",
							NULL,
							&inventory_worker_interval_ms,
							1000, 10, 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("pg_inventory.worker_batch_size",
							"Reservations the worker expires per transaction.",
							NULL,
							&inventory_worker_batch_size,
							1000, 1, 1000000,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("pg_inventory.outbox_retention",
							"How long the worker keeps published outbox events.",
							"The worker removes events published longer ago (version 0.2 on; from 0.8 a ring of the outbox at a time, so they stay up to about twice this).",
							&inventory_outbox_retention_s,
							7 * 24 * 3600, 0, PG_INT32_MAX,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("pg_inventory.history_retention",
							"How long the worker keeps finished reservations.",
							"0 (the default) keeps them; otherwise the worker runs "
							"purge_history for reservations finished longer ago "
							"(version 0.5 on).",
							&inventory_history_retention_s,
							/* at most 3600 days: the 10 years purge_history takes */
							0, 0, 3600 * 24 * 3600,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("pg_inventory.auto_slots",
							"Most stock slots the worker splits a contended one-slot SKU into.",
							"The expiry worker samples lock waits on stock slots every "
							"pg_inventory.auto_slots_interval; a SKU with one slot whose "
							"slots have waiters in pg_inventory.auto_slots_samples samples "
							"in a row is split (set_stock_slots) over four times the callers "
							"seen, as a power of two from 4 to this many slots, and "
							"merged back into one after pg_inventory.auto_slots_idle "
							"without waiters. 0 or 1 switches automatic slotting off "
							"(version 0.3 on).",
							&inventory_auto_slots,
							64, 0, 256,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("pg_inventory.auto_slots_samples",
							"Samples in a row with lock waits on a SKU's stock slots before the worker splits it.",
							NULL,
							&inventory_auto_slots_samples,
							3, 1, 1000,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("pg_inventory.auto_slots_interval",
							"Time between two samples of lock waits on stock slots by the worker.",
							NULL,
							&inventory_auto_slots_interval_ms,
							250, 10, 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("pg_inventory.auto_slots_idle",
							"Time without lock waits after which the worker merges a SKU it split back into one slot.",
							"0 never merges back.",
							&inventory_auto_slots_idle_s,
							600, 0, 3600 * 24 * 3600,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("pg_inventory.test_pause_lock",
							"Test only: fault-injection pause point.",
							"When not 0, every stock change waits for a shared "
							"advisory lock with this key right after it updated the "
							"stock rows, so a test holding the lock can crash or "
							"cancel the call there. Only superusers can set it.",
							&inventory_test_pause_lock,
							0, 0, PG_INT32_MAX,
							PGC_SUSET,
							GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
	DefineCustomStringVariable("pg_inventory.test_fault",
							   "Test only: fault-injection point.",
							   "STEP or STEP:CODE: every call that reaches the named "
							   "step raises an error with SQLSTATE CODE (XX000 when "
							   "omitted; \"cancel\" raises a real query cancel). Only "
							   "superusers can set it.",
							   &inventory_test_fault,
							   "",
							   PGC_SUSET,
							   GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							   check_test_fault, NULL, NULL);
	MarkGUCPrefixReserved("pg_inventory");

	if (process_shared_preload_libraries_in_progress &&
		inventory_worker_database != NULL && inventory_worker_database[0] != '\0')
		InventoryRegisterWorker();
}
