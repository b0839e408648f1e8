/*-------------------------------------------------------------------------
 *
 * src/call.c
 *		The call context of every SQL-callable function: who called, as
 *		whom the statements run, and the internal subtransactions that run
 *		inside a call (README "Roles and grants").
 *
 * Pattern: SECURITY INVOKER functions with a pinned search_path (the SET
 * clause in the install script).  EXECUTE, granted per role, decides which
 * functions a role may call; the role in effect at the call (GetUserId(),
 * so SET ROLE and an enclosing SECURITY DEFINER function are honoured) is
 * checked against the tenant grants (auth.c); then the statements run as
 * the owner of the function (the extension's owner) through
 * SetUserIdAndSecContext, as pg_cron does, because callers have no table
 * privileges: the functions are the only write path.
 *
 * Errors leave the caller as it was.  The switch to the owner is undone by
 * InventoryEndCall on the normal path and, on an error, by the abort of the
 * (sub)transaction that was current when the call began: PostgreSQL
 * restores the user and security context saved when that (sub)transaction
 * started, so a caller that catches the error (a savepoint, a PL/pgSQL
 * EXCEPTION block) continues as itself.  An internal subtransaction begun
 * after the switch would restore the owner instead; so every internal
 * subtransaction goes through InventorySubtransaction or
 * InventoryTrySubtransaction, which roll it back on every error path
 * before the error travels on.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "access/genam.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "utils/fmgroids.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"
#include "utils/syscache.h"

#include "pg_inventory.h"
#include "storage.h"

/*
 * InventoryCallCache
 *		What a call site keeps between calls (fn_extra): the owner of the
 *		called function, looked up once, and the result descriptor.
 */
InventoryFnCache *
InventoryCallCache(FunctionCallInfo fcinfo)
{
	InventoryFnCache *cache = (InventoryFnCache *) fcinfo->flinfo->fn_extra;

	if (cache == NULL)
	{
		HeapTuple	tup;

		tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fcinfo->flinfo->fn_oid));
		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for function %u",
				 fcinfo->flinfo->fn_oid);
		cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt,
									   sizeof(InventoryFnCache));
		cache->owner = ((Form_pg_proc) GETSTRUCT(tup))->proowner;
		ReleaseSysCache(tup);
		fcinfo->flinfo->fn_extra = cache;
	}
	return cache;
}

/*
 * ExtensionNamespace: the schema extension pg_inventory lives in (pg_extension)
 *
 * ExtensionSchema
 *		The OID of schema inventory, after checking that it is the schema
 *		the extension pg_inventory lives in.  Every statement names its
 *		objects "inventory.x", resolved by name when it is planned; should a
 *		role that owns a schema named inventory have renamed the extension's
 *		and put one of its own in its place, the statements, which run as
 *		the owner, would use that role's objects.  The install script refuses
 *		a schema a superuser does not own; this check holds for installs
 *		made before that rule.  The extension's schema is looked up once per
 *		backend (pg_extension has no syscache) and again only when the name
 *		no longer matches.  Errors: 42501.
 */
static Oid
ExtensionNamespace(void)
{
	Oid			ext = get_extension_oid("pg_inventory", true);
	Oid			nsp = InvalidOid;
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	if (!OidIsValid(ext))
		return InvalidOid;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

static Oid
ExtensionSchema(void)
{
	static Oid	extension_schema = InvalidOid;
	Oid			nsp = get_namespace_oid("inventory", true);

	if (nsp != extension_schema || !OidIsValid(nsp))
	{
		extension_schema = ExtensionNamespace();
		if (!OidIsValid(nsp) || nsp != extension_schema)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("schema \"inventory\" is not the schema of extension pg_inventory"),
					 errdetail("The extension's functions run as its owner and use the objects of the schema named inventory; that schema was replaced."),
					 errhint("A superuser renames the schemas back (ALTER SCHEMA ... RENAME) and makes a superuser their owner.")));
	}
	return nsp;
}

/*
 * SchemaHas
 *		Whether relation relname exists in the extension's schema: how a
 *		call tells the schema generation installed in this database (a
 *		syscache lookup, right across ALTER EXTENSION UPDATE).
 */
static bool
SchemaHas(Oid nsp, const char *relname)
{
	return OidIsValid(get_relname_relid(relname, nsp));
}

/*
 * UpgradeLock
 *		The lock every call takes first and keeps until its transaction
 *		ends: ACCESS SHARE on inventory.reservation (a fast-path lock, as
 *		cheap as a lock gets).  Every upgrade step takes ACCESS EXCLUSIVE on
 *		that table before any other lock, so a step waits for the calls in
 *		flight and the calls that start meanwhile wait for the step, then
 *		run on the new schema; without it a step and a call could take their
 *		table locks in different orders and deadlock (README "Upgrading").
 */
static void
UpgradeLock(Oid nsp)
{
	Oid			relid = get_relname_relid("reservation", nsp);

	if (!OidIsValid(relid))
		elog(ERROR, "pg_inventory: relation inventory.reservation is missing");
	LockRelationOid(relid, AccessShareLock);
}

/*
 * CallSpreadKey
 *		A hash of the call's request key (its second argument, when that is
 *		text, as in every call that moves units), else the backend's pid:
 *		which busy slot a caller of a slotted SKU waits for (storage_slot.c).
 */
static uint32
CallSpreadKey(FunctionCallInfo fcinfo)
{
	text	   *key;

	if (fcinfo->nargs < 2 || fcinfo->args[1].isnull ||
		get_fn_expr_argtype(fcinfo->flinfo, 1) != TEXTOID)
		return (uint32) MyProcPid;
	key = DatumGetTextPP(fcinfo->args[1].value);
	return DatumGetUInt32(hash_any((const unsigned char *) VARDATA_ANY(key),
								   VARSIZE_ANY_EXHDR(key)));
}

/*
 * InventoryBeginCall
 *		Starts a call: checks that schema inventory is the extension's,
 *		takes the upgrade lock (UpgradeLock), notes the caller, chooses the storage
 *		of the installed schema generation (inventory.stock_slot: slots, 0.3 on; else one
 *		stock row per SKU, 0.1 and 0.2; inventory.location: per location,
 *		0.5 on; stock_slot.keep_units: slot guards, 0.6 on; inventory.reservation_ring:
 *		the reservations' rings, 0.9 on) and how grants
 *		are kept (inventory.tenant_grant with a marker privilege, 0.4 on),
 *		connects to SPI, switches to the function owner and, when tenant is
 *		not NULL, authorises the caller for it (InventoryAuthorise).
 *
 * Errors: 42501 when the caller may not act for the tenant, or when
 * schema inventory is not the extension's.
 */
void
InventoryBeginCall(FunctionCallInfo fcinfo, InventoryCall *call,
				   const char *tenant)
{
	Oid			owner = InventoryCallCache(fcinfo)->owner;
	Oid			nsp;
	Oid			slots;

	nsp = ExtensionSchema();
	UpgradeLock(nsp);
	call->fcinfo = fcinfo;
	call->tenant = tenant;
	call->caller = GetUserId();
	call->actor = GetUserNameFromId(call->caller, false);
	call->outer_cxt = CurrentMemoryContext;
	slots = get_relname_relid("stock_slot", nsp);
	call->storage = OidIsValid(slots) ? &InventorySlotStorage :
		&InventoryRowStorage;
	call->marked_grants = SchemaHas(nsp, "tenant_grant");
	call->located = SchemaHas(nsp, "location");
	if (call->located)
		call->storage = &InventoryLocatedStorage;
	call->guarded = call->located &&
		get_attnum(slots, "keep_units") != InvalidAttrNumber;
	call->ringed = SchemaHas(nsp, "reservation_ring");
	InventorySlotGuards(call->guarded);
	GetUserIdAndSecContext(&call->save_userid, &call->save_sec_context);
	InventorySlotSpread(CallSpreadKey(fcinfo));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_inventory: SPI_connect failed");
	SetUserIdAndSecContext(owner, call->save_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE);
	if (tenant != NULL)
		InventoryAuthorise(call, tenant);
	InventoryFaultPoint("begin");
}

/* Ends a call: back to the caller's role, SPI disconnected. */
void
InventoryEndCall(InventoryCall *call)
{
	InventoryFaultPoint("end");
	SetUserIdAndSecContext(call->save_userid, call->save_sec_context);
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "pg_inventory: SPI_finish failed");
}

/*
 * InventorySubtransaction
 *		Runs work(arg) in an internal subtransaction: committed when work
 *		returns true, rolled back (with every row lock it took) when it
 *		returns false.  An error inside rolls the subtransaction back,
 *		restores the memory context and resource owner, and is re-thrown:
 *		nothing the subtransaction did is left behind, and the enclosing
 *		(sub)transaction's abort then restores the caller's user.  Returns
 *		what work returned.
 */
bool
InventorySubtransaction(bool (*work) (void *arg), void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	bool		kept;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		kept = work(arg);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (kept)
		ReleaseCurrentSubTransaction();
	else
		RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return kept;
}

/*
 * InventoryTrySubtransaction
 *		Runs work(arg) in an internal subtransaction and commits it.  When
 *		work raises an error that skip(edata) accepts, the subtransaction is
 *		rolled back, the error is returned in *skipped (copied into the
 *		caller's memory context) and the function returns false; any other
 *		error is rolled back and re-thrown.  Used where one bad row must not
 *		stop a batch (expire_due).
 */
bool
InventoryTrySubtransaction(void (*work) (void *arg), void *arg,
						   bool (*skip) (ErrorData *edata),
						   ErrorData **skipped)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool done = true;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		work(arg);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (!skip(edata))
			ReThrowError(edata);
		*skipped = edata;
		done = false;
	}
	PG_END_TRY();
	if (done)
	{
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	return done;
}
