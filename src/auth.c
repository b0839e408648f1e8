/*-------------------------------------------------------------------------
 *
 * src/auth.c
 *		Tenant grants: who may act for which tenant, and grant_tenant /
 *		revoke_tenant (README "Roles and grants").
 *
 * One rule: every function that takes a tenant checks the role in effect
 * at the call against the tenant grants; operators act for every tenant
 * through a grant of '*'.  A role acts for a tenant when it, or a role
 * whose privileges it has (pg_has_role(..., 'USAGE')), holds a grant of
 * that tenant or of '*'.  Superusers act for every tenant.  Granting and
 * revoking need the same authorisation for the tenant (for '*': a grant of
 * '*'), so a role never gives more than it has.
 *
 * Grants follow roles (0.4 on).  A grant is a row of inventory.tenant_grant
 * (tenant, member regrole) whose member also holds USAGE on the marker type
 * inventory.tenant_grantee: that privilege makes PostgreSQL's own
 * dependency tracking (pg_shdepend) keep the role's grants.  DROP ROLE of a
 * granted role fails with "role ... cannot be dropped because some objects
 * depend on it"; DROP OWNED BY the role revokes the marker, which ends its
 * grants at once; pg_dump writes the rows with role names (regrole) and the
 * marker as a GRANT to the role's name, and skips rows whose role no longer
 * holds the marker.  The view inventory.tenant_member shows the live
 * grants, and the check below reads it, so a row left behind by a dropped
 * role never applies to anyone, and every change of grants deletes such
 * rows before a later role could get the same OID and the marker.
 * Schemas before 0.4 keep the grants as rows of the table
 * inventory.tenant_member, read by the same check.
 *
 * 0.6 on, a backend remembers the (role, tenant) pairs the check let
 * through (grant_cache below), so that a call of a tenant the role acted for
 * before runs no statement to check it.  The memory is dropped whenever
 * PostgreSQL says that something the check reads may have changed: a row
 * of inventory.tenant_grant (the statement trigger tenant_grant_changed
 * sends an invalidation of the table, whoever writes it: see
 * inventory_table_changed), a role or a role
 * membership (pg_authid, pg_auth_members: what pg_has_role reads), or a
 * type's privileges (the marker).  Each check first takes in the
 * invalidations other sessions committed, so a revoke takes effect for the
 * next call, in a transaction already open too, as PostgreSQL's own
 * privileges do (they are cached the same way).  Refusals are never
 * remembered: a new grant takes effect at once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "storage/sinval.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "pg_inventory.h"
#include "backend_cache.h"
#include "statement.h"

PG_FUNCTION_INFO_V1(inventory_grant_tenant);
PG_FUNCTION_INFO_V1(inventory_revoke_tenant);

/* $1 tenant, $2 role in effect: the live grants (a view from 0.4 on) */
static InventoryStatement granted = {
	"check tenant grant",
	"SELECT 1 FROM inventory.tenant_member m "
	"WHERE m.tenant IN ($1, '*') "
	"AND pg_has_role($2, m.member::oid, 'USAGE') LIMIT 1",
	2, {TEXTOID, OIDOID}
};

/*
 * The grant cache (0.6 on, see the file header and backend_cache.h): the
 * (role, tenant) pairs the check let through in this backend, forgotten at
 * every invalidation of inventory.tenant_grant, of a role or a role
 * membership (pg_authid, pg_auth_members: what pg_has_role reads), of the
 * marker type (its privileges: GrantCacheConcerns) or of a database
 * (pg_has_role reads its owner for pg_database_owner).  A tenant name is
 * at most 64 characters (inventory.name_id), so at most 256 bytes of
 * UTF-8; a longer one is never remembered.  At most 1,024 pairs (about
 * 300 KB).
 */
#define GRANT_CACHE_TENANT 257

typedef struct GrantCacheKey
{
	Oid			role;
	char		tenant[GRANT_CACHE_TENANT];
} GrantCacheKey;

static const int grant_cache_syscaches[] = {
	AUTHOID, AUTHMEMROLEMEM, TYPEOID, DATABASEOID, -1
};

/*
 * The hash value of the marker type inventory.tenant_grantee in the
 * TYPEOID syscache (0: not known yet), set at each read of a grant
 */
static uint32 marker_hash = 0;

/*
 * Of pg_type's invalidations, only those of the marker (its privileges are
 * the live grants) concern the cache, not those of every type that a
 * CREATE TABLE (or CREATE TEMP TABLE) anywhere in the database makes.  A
 * hash value of 0 means every entry; an unknown marker, every type.
 */
static bool
GrantCacheConcerns(int cacheid, uint32 hashvalue)
{
	return cacheid != TYPEOID || hashvalue == 0 || marker_hash == 0 ||
		hashvalue == marker_hash;
}

static InventoryBackendCache grant_cache = {
	"pg_inventory tenant grants", "tenant_grant", grant_cache_syscaches,
	sizeof(GrantCacheKey), sizeof(GrantCacheKey), false, 1024,
	GrantCacheConcerns
};

/* The TYPEOID hash value of inventory.tenant_grantee; 0 when there is none */
static uint32
MarkerHash(void)
{
	Oid			nsp = get_namespace_oid("inventory", true);
	Oid			marker = OidIsValid(nsp) ?
		GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
						CStringGetDatum("tenant_grantee"),
						ObjectIdGetDatum(nsp)) : InvalidOid;

	return OidIsValid(marker) ?
		GetSysCacheHashValue1(TYPEOID, ObjectIdGetDatum(marker)) : 0;
}

/* Fills key with role and tenant; false when the tenant is too long. */
static bool
GrantCacheKeyOf(GrantCacheKey *key, Oid role, const char *tenant)
{
	size_t		len = strlen(tenant);

	if (len >= GRANT_CACHE_TENANT)
		return false;
	memset(key, 0, sizeof(GrantCacheKey));
	key->role = role;
	memcpy(key->tenant, tenant, len);
	return true;
}

/*
 * Whether the caller of call has a live grant of tenant (or '*'): from the
 * grant cache when the schema has the trigger that keeps it right (0.6 on),
 * else by the statement
 */
static bool
Granted(InventoryCall *call, const char *tenant)
{
	Datum		values[2];
	GrantCacheKey key;
	bool		cached = call->guarded &&
		GrantCacheKeyOf(&key, call->caller, tenant);
	uint64		generation = 0;

	if (cached)
	{
		if (InventoryCacheFind(&grant_cache, &key) != NULL)
			return true;
		generation = InventoryCacheBeginRead(&grant_cache);
		marker_hash = MarkerHash();
	}
	values[0] = CStringGetTextDatum(tenant);
	values[1] = ObjectIdGetDatum(call->caller);
	if (InventoryRunLatest(&granted, values, NULL) == 0)
		return false;
	if (cached)
		(void) InventoryCacheStore(&grant_cache, generation, &key);
	return true;
}

PG_FUNCTION_INFO_V1(inventory_table_changed);

/*
 * inventory_table_changed
 *		inventory._table_changed(), the function of the statement triggers
 *		tenant_grant_changed and location_changed (0.6 on), AFTER INSERT,
 *		UPDATE, DELETE or TRUNCATE: sends an invalidation of the table, which
 *		makes every backend drop what it remembered of it (the grant cache
 *		here, the location cache of allocate.c) when the change commits, and
 *		this backend at its next command (or when the change rolls back).
 *		Errors: XX000 when not called as a trigger.
 */
Datum
inventory_table_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "pg_inventory: inventory._table_changed() is a trigger function");
	CacheInvalidateRelcacheByRelid(RelationGetRelid(trigdata->tg_relation));
	return PointerGetDatum(NULL);
}

/*
 * InventoryAuthorise
 *		Raises 42501 unless the caller of call may act for tenant (a tenant
 *		name, or '*' for grants of every tenant): it is a superuser, or it
 *		has the privileges of a role granted the tenant or '*'.  Runs as the
 *		owner, inside the call.
 */
void
InventoryAuthorise(InventoryCall *call, const char *tenant)
{
	if (superuser_arg(call->caller))
		return;
	if (!Granted(call, tenant))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not act for tenant \"%s\"",
						call->actor, tenant),
				 strcmp(tenant, "*") == 0 ?
				 errdetail("Only a role with a grant of \"*\" (or a superuser) acts for every tenant.") :
				 errdetail("The role has no grant of the tenant nor of \"*\"."),
				 errhint("A role authorised for it grants it with inventory.grant_tenant(%s, %s).",
						 quote_literal_cstr(tenant), quote_literal_cstr(call->actor))));
}

/*
 * InventoryActsForAll
 *		Whether the caller of call acts for every tenant: it is a superuser,
 *		or it has the privileges of a role granted '*' (read as
 *		InventoryAuthorise reads grants).  For results that only operators
 *		see (availability's counters).  Runs as the owner, inside the call.
 */
bool
InventoryActsForAll(InventoryCall *call)
{
	if (superuser_arg(call->caller))
		return true;
	return Granted(call, "*");
}

/* Runs one utility statement (DDL) of a grant change. */
static void
RunUtility(const char *sql)
{
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "pg_inventory: \"%s\" failed", sql);
}

/* $1 role: whether it holds the marker of live grants */
static InventoryStatement holds_marker = {
	"check grant marker",
	"SELECT 1 FROM pg_catalog.pg_type t, pg_catalog.aclexplode(t.typacl) a "
	"WHERE t.oid = 'inventory.tenant_grantee'::pg_catalog.regtype AND a.grantee = $1",
	1, {OIDOID}
};

/*
 * The rows of roles without the marker: left behind by DROP OWNED BY (and
 * then by DROP ROLE, as a bare OID that a later role could get)
 */
static InventoryStatement forget_stale = {
	"delete stale tenant grants",
	"DELETE FROM inventory.tenant_grant g WHERE g.member::oid NOT IN ("
	"SELECT a.grantee FROM pg_catalog.pg_type t, pg_catalog.aclexplode(t.typacl) a "
	"WHERE t.oid = 'inventory.tenant_grantee'::pg_catalog.regtype)",
	0, {InvalidOid}
};

/* $1 tenant, $2 role */
static InventoryStatement insert_grant = {
	"insert tenant grant",
	"INSERT INTO inventory.tenant_grant (tenant, member) VALUES ($1, $2) "
	"ON CONFLICT (tenant, member) DO NOTHING RETURNING 1",
	2, {TEXTOID, REGROLEOID}
};

static InventoryStatement delete_grant = {
	"delete tenant grant",
	"DELETE FROM inventory.tenant_grant g WHERE g.tenant = $1 "
	"AND g.member = $2 RETURNING 1",
	2, {TEXTOID, REGROLEOID}
};

/* $1 role: whether it has grants left */
static InventoryStatement has_grants = {
	"find tenant grants of a role",
	"SELECT 1 FROM inventory.tenant_grant g WHERE g.member = $1 LIMIT 1",
	1, {REGROLEOID}
};

/*
 * ChangeGrant
 *		0.4 on: adds the grant (tenant, member), giving member the marker
 *		with its first grant, or removes it, taking the marker back with
 *		its last.  Returns whether a live grant was added or removed.
 *		Changes of grants wait for each other (the lock conflicts with
 *		itself) and read what the one before committed (the latest
 *		snapshot, whatever the isolation level); business calls, which only
 *		read the grants, never wait.
 */
static bool
ChangeGrant(const char *tenant, Oid member, bool grant)
{
	const char *role = quote_identifier(GetUserNameFromId(member, false));
	Datum		values[2];
	bool		marked;
	bool		changed;

	RunUtility("LOCK TABLE inventory.tenant_grant IN SHARE ROW EXCLUSIVE MODE");
	InventoryRun(&forget_stale, NULL, NULL, SPI_OK_DELETE);
	values[0] = ObjectIdGetDatum(member);
	marked = InventoryRunLatest(&holds_marker, values, NULL) > 0;
	if (!grant && !marked)
		return false;
	if (grant && !marked)
		RunUtility(psprintf("GRANT USAGE ON TYPE inventory.tenant_grantee TO %s",
							role));
	values[0] = CStringGetTextDatum(tenant);
	values[1] = ObjectIdGetDatum(member);
	changed = InventoryRun(grant ? &insert_grant : &delete_grant, values, NULL,
						   grant ? SPI_OK_INSERT_RETURNING :
						   SPI_OK_DELETE_RETURNING) > 0;
	if (!grant && InventoryRunLatest(&has_grants, values + 1, NULL) == 0)
		RunUtility(psprintf("REVOKE USAGE ON TYPE inventory.tenant_grantee FROM %s",
							role));
	return changed;
}

/* Before 0.4: $1 tenant, $2 role */
static InventoryStatement grant_row = {
	"insert tenant grant",
	"INSERT INTO inventory.tenant_member (tenant, member) VALUES ($1, $2) "
	"ON CONFLICT (tenant, member) DO NOTHING RETURNING 1",
	2, {TEXTOID, REGROLEOID}
};

static InventoryStatement revoke_row = {
	"delete tenant grant",
	"DELETE FROM inventory.tenant_member m WHERE m.tenant = $1 "
	"AND m.member = $2 RETURNING 1",
	2, {TEXTOID, REGROLEOID}
};

/*
 * GrantChange
 *		The work of grant_tenant and revoke_tenant: tenant within the name
 *		limits or '*' (canonical when granting), member a role (not NULL,
 *		not PUBLIC); the caller must be authorised for the tenant.  Returns
 *		whether a grant was added or removed; a change is audited (0.5:
 *		inventory.operator_audit, detail {"member": role}).  Errors: 22023,
 *		42501.
 */
static Datum
GrantChange(FunctionCallInfo fcinfo, bool grant)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant",
										  NAME_WILDCARD | (grant ? NAME_CANONICAL : 0));
	InventoryCall call;
	Oid			member;
	bool		changed;

	InventoryRequireArg(fcinfo, 1, "member");
	member = PG_GETARG_OID(1);
	if (!OidIsValid(member))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("member must be a role")));

	InventoryBeginCall(fcinfo, &call, tenant);
	if (call.marked_grants)
		changed = ChangeGrant(tenant, member, grant);
	else
	{
		Datum		values[2];

		values[0] = CStringGetTextDatum(tenant);
		values[1] = ObjectIdGetDatum(member);
		changed = InventoryRun(grant ? &grant_row : &revoke_row, values, NULL,
							   grant ? SPI_OK_INSERT_RETURNING :
							   SPI_OK_DELETE_RETURNING) > 0;
	}
	if (changed)
		InventoryAudit(&call, grant ? "grant_tenant" : "revoke_tenant", tenant,
					   psprintf("{\"member\": %s}",
								InventoryJsonText(GetUserNameFromId(member, false))),
					   NULL);
	InventoryEndCall(&call);
	PG_RETURN_BOOL(changed);
}

/*
 * inventory_grant_tenant
 *		grant_tenant(tenant text, member regrole) RETURNS boolean
 *
 * Lets member (and roles with its privileges) act for tenant; '*' means
 * every tenant.  The caller must itself be authorised for tenant (for '*':
 * hold a grant of '*'), or be a superuser.  Returns false when the grant
 * existed.  Errors: 22023, 42501.
 */
Datum
inventory_grant_tenant(PG_FUNCTION_ARGS)
{
	return GrantChange(fcinfo, true);
}

/*
 * inventory_revoke_tenant
 *		revoke_tenant(tenant text, member regrole) RETURNS boolean
 *
 * Removes exactly the grant (tenant, member); revoking '*' removes the
 * wildcard only.  The caller must be authorised for tenant as for
 * grant_tenant.  Returns false for an unknown grant.  Errors: 22023, 42501.
 */
Datum
inventory_revoke_tenant(PG_FUNCTION_ARGS)
{
	return GrantChange(fcinfo, false);
}

