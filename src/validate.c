/*-------------------------------------------------------------------------
 *
 * src/validate.c
 *		Argument checks of pg_inventory (CONTRACT.md "Limits" and "Errors").
 *
 * Every check raises 22023 (invalid_parameter_value) with a message that
 * names the argument, before anything is read or written.  The functions
 * are not STRICT, so NULL arguments arrive here and are refused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "pg_inventory.h"

/* Refuses NULL for argument argno (argname in the message). */
void
InventoryRequireArg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must not be null", argname)));
}

/*
 * CheckIdentifier
 *		Length in characters within 1..maxchars and no control character
 *		(below U+0020, or U+007F).  UTF-8 and the other server encodings keep
 *		those bytes for those characters only, so a byte scan is exact.
 */
static void
CheckIdentifier(const char *argname, const char *s, int len, int maxchars)
{
	int			nchars;
	int			i;

	nchars = pg_mbstrlen_with_len(s, len);
	if (nchars < 1 || nchars > maxchars)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be 1 to %d characters long", argname, maxchars),
				 errdetail("The value given has %d characters.", nchars)));
	for (i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (c < 0x20 || c == 0x7f)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must not contain control characters", argname),
					 errdetail("Byte %d is 0x%02x.", i + 1, c)));
	}
}

/*
 * InventoryNameArg
 *		A tenant or SKU argument: not NULL, 1 to 64 characters, no control
 *		characters; "*" only where allow_wildcard (grants).  Returns it as a
 *		palloc'd C string.  Errors: 22023.
 */
char *
InventoryNameArg(FunctionCallInfo fcinfo, int argno, const char *argname,
				 bool allow_wildcard)
{
	text	   *t;
	char	   *s;

	InventoryRequireArg(fcinfo, argno, argname);
	t = PG_GETARG_TEXT_PP(argno);
	CheckIdentifier(argname, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t),
					INVENTORY_NAME_MAX_CHARS);
	s = text_to_cstring(t);
	if (!allow_wildcard && strcmp(s, "*") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s \"*\" is reserved for grants", argname),
				 errhint("Use \"*\" only with grant_tenant and revoke_tenant.")));
	return s;
}

/*
 * InventoryKeyArg
 *		A request key: not NULL, 1 to 200 characters, no control characters.
 *		Errors: 22023.
 */
char *
InventoryKeyArg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	text	   *t;

	InventoryRequireArg(fcinfo, argno, argname);
	t = PG_GETARG_TEXT_PP(argno);
	CheckIdentifier(argname, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t),
					INVENTORY_KEY_MAX_CHARS);
	return text_to_cstring(t);
}

/*
 * InventoryReasonArg
 *		A reason: at most 1000 characters.  When required it must be neither
 *		NULL nor empty; otherwise NULL gives NULL.  Errors: 22023.
 */
char *
InventoryReasonArg(FunctionCallInfo fcinfo, int argno, const char *argname,
				   bool required)
{
	text	   *t;
	int			nchars;

	if (PG_ARGISNULL(argno))
	{
		if (required)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"%s\" must not be null", argname),
					 errhint("Say why, in at most %d characters.",
							 INVENTORY_REASON_MAX_CHARS)));
		return NULL;
	}
	t = PG_GETARG_TEXT_PP(argno);
	nchars = pg_mbstrlen_with_len(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	if (required && nchars == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must not be empty", argname),
				 errhint("Say why, in at most %d characters.",
						 INVENTORY_REASON_MAX_CHARS)));
	if (nchars > INVENTORY_REASON_MAX_CHARS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be at most %d characters long",
						argname, INVENTORY_REASON_MAX_CHARS),
				 errdetail("The value given has %d characters.", nchars)));
	return text_to_cstring(t);
}

/*
 * InventoryTtlArg
 *		The hold time of a reservation: not NULL, above zero and at most
 *		7 days (months count as 30 days, as interval comparison does).
 *		Errors: 22023.
 */
Interval *
InventoryTtlArg(FunctionCallInfo fcinfo, int argno)
{
	Interval   *ttl;
	Interval	zero = {0, 0, 0};
	Interval	week = {0, 7, 0};

	InventoryRequireArg(fcinfo, argno, "ttl");
	ttl = PG_GETARG_INTERVAL_P(argno);
	if (!DatumGetBool(DirectFunctionCall2(interval_gt,
										  IntervalPGetDatum(ttl),
										  IntervalPGetDatum(&zero))) ||
		DatumGetBool(DirectFunctionCall2(interval_gt,
										 IntervalPGetDatum(ttl),
										 IntervalPGetDatum(&week))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl must be above zero and at most 7 days"),
				 errdetail("The value given is %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(ttl))))));
	return ttl;
}

static int
CompareLines(const void *a, const void *b)
{
	return strcmp(((const InventoryLine *) a)->sku,
				  ((const InventoryLine *) b)->sku);
}

/*
 * SortAndMerge
 *		Sorts the lines by sku in byte order (the lock order) and merges
 *		lines of the same SKU into one with the summed quantity.  The total
 *		must fit an integer (CONTRACT.md reserve_lines).  Errors: 22023.
 */
static void
SortAndMerge(InventoryLines *lines)
{
	int			i;
	int			out = 0;
	int64		total = 0;

	qsort(lines->items, lines->count, sizeof(InventoryLine), CompareLines);
	for (i = 0; i < lines->count; i++)
	{
		total += lines->items[i].quantity;	/* at most 100 * 2^31: no overflow */
		if (out > 0 && strcmp(lines->items[out - 1].sku, lines->items[i].sku) == 0)
			lines->items[out - 1].quantity += lines->items[i].quantity;
		else
			lines->items[out++] = lines->items[i];
	}
	if (total > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lines must add up to at most %d units", PG_INT32_MAX),
				 errdetail("They add up to " INT64_FORMAT " units.", total)));
	lines->count = out;
	lines->total = total;
}

static void
LineError(int elem, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("lines[%d] %s", elem, what),
			 errhint("Pass lines as [{\"sku\": \"A\", \"quantity\": 2}, ...].")));
}

/*
 * LineQuantity
 *		A JSON number with an integral value from 1 to 2147483647 (2, 2.0
 *		and 2e0 are the same).  Errors: 22023.
 */
static int64
LineQuantity(int elem, JsonbValue *v)
{
	char	   *digits;
	char	   *p;
	int64		q = 0;

	if (v->type != jbvNumeric)
		LineError(elem, "quantity must be a JSON number");
	digits = numeric_normalize(v->val.numeric);
	if (strchr(digits, '.') != NULL || strchr(digits, 'N') != NULL)
		LineError(elem, "quantity must be a whole number");
	p = digits;
	if (*p == '-')
		LineError(elem, "quantity must be at least 1");
	for (; *p; p++)
	{
		if (*p < '0' || *p > '9')
			LineError(elem, "quantity must be a whole number");
		q = q * 10 + (*p - '0');
		if (q > PG_INT32_MAX)
			LineError(elem, "quantity must be at most 2147483647");
	}
	if (q < 1)
		LineError(elem, "quantity must be at least 1");
	return q;
}

/*
 * InventoryParseLines
 *		Reads reserve_lines' argument: a non-empty JSON array of at most 100
 *		objects with exactly the keys "sku" (a string within the identifier
 *		limits) and "quantity" (see LineQuantity).  Fills lines sorted and
 *		merged by SKU.  Errors: 22023.
 */
void
InventoryParseLines(Jsonb *jb, InventoryLines *lines)
{
	int			n;
	int			i;

	if (!JB_ROOT_IS_ARRAY(jb) || JB_ROOT_IS_SCALAR(jb))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lines must be a JSON array"),
				 errhint("Pass lines as [{\"sku\": \"A\", \"quantity\": 2}, ...].")));
	n = JB_ROOT_COUNT(jb);
	if (n < 1 || n > INVENTORY_LINES_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lines must hold 1 to %d lines", INVENTORY_LINES_MAX),
				 errdetail("The array given has %d elements.", n)));

	lines->count = n;
	lines->items = palloc(sizeof(InventoryLine) * n);
	for (i = 0; i < n; i++)
	{
		JsonbValue *elem = getIthJsonbValueFromContainer(&jb->root, i);
		JsonbContainer *obj;
		JsonbValue	sku;
		JsonbValue	qty;

		if (elem == NULL || elem->type != jbvBinary ||
			!JsonContainerIsObject(elem->val.binary.data))
			LineError(i, "must be an object with the keys \"sku\" and \"quantity\"");
		obj = elem->val.binary.data;
		if (JsonContainerSize(obj) != 2 ||
			getKeyJsonValueFromContainer(obj, "sku", 3, &sku) == NULL ||
			getKeyJsonValueFromContainer(obj, "quantity", 8, &qty) == NULL)
			LineError(i, "must have exactly the keys \"sku\" and \"quantity\"");
		if (sku.type != jbvString)
			LineError(i, "sku must be a JSON string");
		CheckIdentifier("sku", sku.val.string.val, sku.val.string.len,
						INVENTORY_NAME_MAX_CHARS);
		lines->items[i].sku = pnstrdup(sku.val.string.val, sku.val.string.len);
		lines->items[i].quantity = LineQuantity(i, &qty);
	}
	SortAndMerge(lines);
}

/* The single line of reserve(): sku and quantity already checked. */
void
InventoryOneLine(const char *sku, int32 quantity, InventoryLines *lines)
{
	lines->count = 1;
	lines->total = quantity;
	lines->items = palloc(sizeof(InventoryLine));
	lines->items[0].sku = pstrdup(sku);
	lines->items[0].quantity = quantity;
}

/* Whether two sorted, merged sets of lines are the same payload. */
bool
InventoryLinesEqual(const InventoryLines *a, const InventoryLines *b)
{
	int			i;

	if (a->count != b->count)
		return false;
	for (i = 0; i < a->count; i++)
		if (a->items[i].quantity != b->items[i].quantity ||
			strcmp(a->items[i].sku, b->items[i].sku) != 0)
			return false;
	return true;
}

/* The lines as "A x 2, B x 1", for messages. */
char *
InventoryLinesText(const InventoryLines *lines)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	for (i = 0; i < lines->count; i++)
		appendStringInfo(&buf, "%s%s x " INT64_FORMAT, i > 0 ? ", " : "",
						 lines->items[i].sku, lines->items[i].quantity);
	return buf.data;
}

/* The SKUs as a text[] Datum, in line order. */
Datum
InventorySkuArray(const InventoryLines *lines)
{
	Datum	   *elems = palloc(sizeof(Datum) * lines->count);
	int			i;

	for (i = 0; i < lines->count; i++)
		elems[i] = CStringGetTextDatum(lines->items[i].sku);
	return PointerGetDatum(construct_array(elems, lines->count, TEXTOID,
										   -1, false, TYPALIGN_INT));
}

/* The quantities as an int4[] or int8[] Datum, in line order. */
Datum
InventoryQuantityArray(const InventoryLines *lines, Oid elemtype)
{
	Datum	   *elems = palloc(sizeof(Datum) * lines->count);
	int			i;

	for (i = 0; i < lines->count; i++)
		elems[i] = elemtype == INT4OID ?
			Int32GetDatum((int32) lines->items[i].quantity) :
			Int64GetDatum(lines->items[i].quantity);
	if (elemtype == INT4OID)
		return PointerGetDatum(construct_array(elems, lines->count, INT4OID,
											   4, true, TYPALIGN_INT));
	return PointerGetDatum(construct_array(elems, lines->count, INT8OID,
										   8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}
