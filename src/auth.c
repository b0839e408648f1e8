/*-------------------------------------------------------------------------
 *
 * src/auth.c
 *		Who may call, and as whom pg_inventory writes (CONTRACT.md
 *		"Authorisation").
 *
 * Pattern: SECURITY INVOKER functions with a pinned search_path (the SET
 * clause in the install script).  EXECUTE, granted per role, decides which
 * functions a role may call.  The role in effect at the call (GetUserId(),
 * so SET ROLE and an enclosing SECURITY DEFINER function are honoured) is
 * checked against inventory.tenant_member for tenant-scoped calls; then the
 * statements run as the owner of the function (the extension's owner) via
 * SetUserIdAndSecContext, as pg_cron does, because callers have no table
 * privileges: the functions are the only write path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

#include "pg_inventory.h"
#include "plans.h"

/*
 * CallCache
 *		The per-call-site cache (fn_extra) of the called function: its owner,
 *		looked up once.
 */
static InventoryFnCache *
CallCache(FunctionCallInfo fcinfo)
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
 * InventoryBeginCall
 *		Connects to SPI, switches to the function owner and, when tenant is
 *		not NULL, authorises the role in effect for that tenant: superusers
 *		act for every tenant; other roles need a grant of the tenant or of
 *		'*' to themselves or to a role whose privileges they have
 *		(pg_has_role USAGE).
 *
 * Errors: 42501 when the role has no grant for the tenant.
 */
void
InventoryBeginCall(FunctionCallInfo fcinfo, InventoryCall *call,
				   const char *tenant)
{
	Oid			owner = CallCache(fcinfo)->owner;

	call->caller = GetUserId();
	call->actor = GetUserNameFromId(call->caller, false);
	call->outer_cxt = CurrentMemoryContext;
	GetUserIdAndSecContext(&call->save_userid, &call->save_sec_context);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_inventory: SPI_connect failed");
	SetUserIdAndSecContext(owner, call->save_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE);

	if (tenant != NULL && !superuser_arg(call->caller))
	{
		Datum		values[2];

		values[0] = CStringGetTextDatum(tenant);
		values[1] = ObjectIdGetDatum(call->caller);
		if (InventoryExec(PLAN_AUTH_TENANT, values, NULL, true,
						  SPI_OK_SELECT) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("role \"%s\" may not act for tenant \"%s\"",
							call->actor, tenant),
					 errhint("An operator grants it with inventory.grant_tenant('%s', '%s').",
							 tenant, call->actor)));
	}
}

/* Switches back to the caller's role and disconnects from SPI. */
void
InventoryEndCall(InventoryCall *call)
{
	SetUserIdAndSecContext(call->save_userid, call->save_sec_context);
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "pg_inventory: SPI_finish failed");
}
