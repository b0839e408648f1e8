/*-------------------------------------------------------------------------
 *
 * src/validate.c
 *		Argument checks of pg_inventory (README "Limits" and "Errors"), and
 *		the errors more than one function raises.
 *
 * Every check raises 22023 (invalid_parameter_value) with a message that
 * names the argument, before anything is read or written.  The functions
 * are not STRICT, so NULL arguments arrive here and are refused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "inventory_errcodes.h"
#include "pg_inventory.h"

/* Refuses NULL for argument argno (argname in the message). */
void
InventoryRequireArg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must not be null", argname),
				 errdetail("The value given is NULL.")));
}

/*
 * IsWhiteSpace
 *		Whether code point c has the Unicode White_Space property.
 */
static bool
IsWhiteSpace(pg_wchar c)
{
	return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0x85 || c == 0xa0 ||
		c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 ||
		c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* the intervals of combining characters, as PostgreSQL's wcwidth uses them */
struct mbinterval
{
	unsigned int first;
	unsigned int last;
};
#include "common/unicode_combining_table.h"

/* Whether code point c is a combining character (it joins the one before) */
static bool
IsCombining(pg_wchar c)
{
	int			lo = 0;
	int			hi = lengthof(combining) - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (c < combining[mid].first)
			hi = mid - 1;
		else if (c > combining[mid].last)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/*
 * IsInvisible
 *		Whether code point c shows nothing by itself: the Unicode
 *		Default_Ignorable_Code_Point characters (zero-width spaces and
 *		joiners, the soft hyphen, bidirectional marks, variation selectors,
 *		fillers, tags), the C1 control characters and the braille blank.
 */
static bool
IsInvisible(pg_wchar c)
{
	return (c >= 0x80 && c <= 0x9f) || c == 0xad || c == 0x34f ||
		c == 0x61c || (c >= 0x115f && c <= 0x1160) ||
		(c >= 0x17b4 && c <= 0x17b5) || (c >= 0x180b && c <= 0x180f) ||
		(c >= 0x200b && c <= 0x200f) || (c >= 0x202a && c <= 0x202e) ||
		(c >= 0x2060 && c <= 0x206f) || c == 0x2800 || c == 0x3164 ||
		(c >= 0xfe00 && c <= 0xfe0f) || c == 0xfeff || c == 0xffa0 ||
		(c >= 0xfff0 && c <= 0xfff8) || (c >= 0x1bca0 && c <= 0x1bca3) ||
		(c >= 0x1d173 && c <= 0x1d17a) || (c >= 0xe0000 && c <= 0xe0fff);
}

/*
 * CheckCanonical
 *		The identifier rule of 0.4 (README "Limits"): an identifier that
 *		creates something (a tenant, a SKU, a request key) is in Unicode
 *		normalization form NFC, neither begins nor ends with a white-space
 *		character, holds no invisible character (IsInvisible) and does not
 *		begin with a combining character, so that no two spellings that look
 *		the same name two different things.  (Characters of different
 *		scripts that look alike, such as Latin "a" and Cyrillic "а", are not
 *		detected.)  In a database whose encoding is not
 *		UTF-8 only the ASCII space is checked (there is no normalization).
 *		Errors: 22023.
 */
static void
CheckCanonical(const char *argname, const char *s, int len)
{
	pg_wchar	first;
	pg_wchar	last;
	bool		ascii = true;
	int			i;

	if (GetDatabaseEncoding() != PG_UTF8)
	{
		first = (unsigned char) s[0];
		last = (unsigned char) s[len - 1];
	}
	else
	{
		const unsigned char *p = (const unsigned char *) s;
		const unsigned char *end = p + len;

		for (i = 0; i < len && ascii; i++)
			ascii = !IS_HIGHBIT_SET(s[i]);
		first = last = utf8_to_unicode(p);
		for (; !ascii && p < end; p += pg_utf_mblen(p))
		{
			last = utf8_to_unicode(p);
			if (IsInvisible(last))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s must not contain invisible characters", argname),
						 errdetail("Character %d is U+%04X, which shows nothing.",
								   pg_mbstrlen_with_len(s, (const char *) p - s) + 1,
								   last),
						 errhint("Remove it: with it the name would look like another one.")));
		}
		if (ascii)
			last = (unsigned char) s[len - 1];
		else if (IsCombining(first))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must not begin with a combining character", argname),
					 errdetail("It begins with U+%04X, which joins the character before it.",
							   first)));
	}
	if (IsWhiteSpace(first) || IsWhiteSpace(last))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not begin or end with white space", argname),
				 errdetail("It %s with the character U+%04X.",
						   IsWhiteSpace(first) ? "begins" : "ends",
						   IsWhiteSpace(first) ? first : last),
				 errhint("Trim the value: \" a\" and \"a\" would look the same in every message.")));
	if (GetDatabaseEncoding() == PG_UTF8 && !ascii &&
		!DatumGetBool(DirectFunctionCall2(unicode_is_normalized,
										  PointerGetDatum(cstring_to_text_with_len(s, len)),
										  CStringGetTextDatum("NFC"))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be in Unicode normalization form NFC", argname),
				 errhint("Normalize it first, e.g. with normalize(value, NFC): the same text in another form would be a second name that looks identical.")));
}

/*
 * CheckIdentifier
 *		Length in characters within 1..maxchars and no control character
 *		(below U+0020, or U+007F).  UTF-8 and the other server encodings keep
 *		those bytes for those characters only, so a byte scan is exact.
 *		With NAME_CANONICAL in flags, also CheckCanonical.  Errors: 22023.
 */
static void
CheckIdentifier(const char *argname, const char *s, int len, int maxchars,
				int flags)
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
	if (flags & NAME_CANONICAL)
		CheckCanonical(argname, s, len);
}

/*
 * InventoryNameArg
 *		A tenant or SKU argument: not NULL, 1 to 64 characters, no control
 *		characters; "*" only with NAME_WILDCARD (grants); canonical (see
 *		CheckCanonical) with NAME_CANONICAL, which functions that create or
 *		grant something ask for and functions that only look up stored rows
 *		do not (so rows stored before 0.4 are still found).  Returns it as a
 *		palloc'd C string.  Errors: 22023.
 */
char *
InventoryNameArg(FunctionCallInfo fcinfo, int argno, const char *argname,
				 int flags)
{
	text	   *t;
	char	   *s;

	InventoryRequireArg(fcinfo, argno, argname);
	t = PG_GETARG_TEXT_PP(argno);
	CheckIdentifier(argname, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t),
					INVENTORY_NAME_MAX_CHARS, flags);
	s = text_to_cstring(t);
	if (!(flags & NAME_WILDCARD) && strcmp(s, "*") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s \"*\" is reserved for grants", argname),
				 errhint("Use \"*\" only with grant_tenant and revoke_tenant.")));
	return s;
}

/*
 * InventoryKeyArg
 *		A request key: not NULL, 1 to 200 characters, no control characters;
 *		canonical with NAME_CANONICAL.  Errors: 22023.
 */
char *
InventoryKeyArg(FunctionCallInfo fcinfo, int argno, const char *argname,
				int flags)
{
	text	   *t;

	InventoryRequireArg(fcinfo, argno, argname);
	t = PG_GETARG_TEXT_PP(argno);
	CheckIdentifier(argname, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t),
					INVENTORY_KEY_MAX_CHARS, flags);
	return text_to_cstring(t);
}

/*
 * Whether character c shows nothing: a control character (C0, DEL, C1), a
 * Unicode White_Space character or a zero-width one (U+200B to U+200D,
 * U+2060, U+FEFF)
 */
static bool
ShowsNothing(pg_wchar c)
{
	return c < 0x21 || (c >= 0x7F && c <= 0xA0) || c == 0x1680 ||
		(c >= 0x2000 && c <= 0x200D) || c == 0x2028 || c == 0x2029 ||
		c == 0x202F || c == 0x205F || c == 0x2060 || c == 0x3000 ||
		c == 0xFEFF;
}

/* Whether the len bytes at s (server encoding) show nothing at all */
static bool
AllBlank(const char *s, int len)
{
	pg_wchar   *w = palloc(sizeof(pg_wchar) * (len + 1));
	int			n = pg_mb2wchar_with_len(s, w, len);
	int			i;

	for (i = 0; i < n; i++)
		if (!ShowsNothing(w[i]))
			return false;
	return true;
}

/*
 * InventoryReasonArg
 *		A reason: at most 1000 characters.  When required (adjust,
 *		compensate, discard_dead_letters: the reason is the record of why)
 *		it must be neither NULL, empty nor blank (white space, control and
 *		zero-width characters only); otherwise NULL
 *		gives NULL.  Errors: 22023.
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
					 errdetail("This call is kept with its reason, for whoever asks later why it was made."),
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
				 errdetail("This call is kept with its reason, for whoever asks later why it was made."),
				 errhint("Say why, in at most %d characters.",
						 INVENTORY_REASON_MAX_CHARS)));
	if (required && AllBlank(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must not be blank", argname),
				 errdetail("The value given has only white space or invisible characters (%d characters).",
						   nchars),
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
 * InventoryQuantityArg
 *		A quantity in units: not NULL, 1 to 2147483647.  negative_hint (or
 *		NULL) is added to the error of a negative value, zero_hint (or
 *		NULL) to that of 0.  Errors: 22023.
 */
int32
InventoryQuantityArg(FunctionCallInfo fcinfo, int argno,
					 const char *negative_hint, const char *zero_hint)
{
	int32		quantity;
	const char *hint;

	InventoryRequireArg(fcinfo, argno, "quantity");
	quantity = PG_GETARG_INT32(argno);
	hint = quantity < 0 ? negative_hint : zero_hint;
	if (quantity < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("quantity must be at least 1"),
				 errdetail("The value given is %d.", quantity),
				 hint ? errhint("%s", hint) : 0));
	return quantity;
}

/*
 * InventoryTtlArg
 *		The hold time of a reservation (README "Limits", the ttl rule of
 *		0.4): not NULL, a duration: no months or years component (their
 *		length depends on the calendar), days of exactly 24 hours.  Above
 *		zero and at most 7 days.  Returns it in microseconds.  Errors: 22023.
 */
int64
InventoryTtlArg(FunctionCallInfo fcinfo, int argno)
{
	Interval   *ttl;
	int64		usecs;
	bool		overflow;

	InventoryRequireArg(fcinfo, argno, "ttl");
	ttl = PG_GETARG_INTERVAL_P(argno);
	if (ttl->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl must not have a months or years component"),
				 errdetail("The value given is %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(ttl)))),
				 errhint("Give the hold time in days (of 24 hours), hours, minutes or seconds.")));
	overflow = pg_mul_s64_overflow((int64) ttl->day, USECS_PER_DAY, &usecs) ||
		pg_add_s64_overflow(usecs, ttl->time, &usecs);
	if (overflow || usecs <= 0 || usecs > INVENTORY_TTL_MAX_USECS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl must be above zero and at most 7 days"),
				 errdetail("The value given is %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(ttl))))));
	return usecs;
}

/*
 * InventoryExpiry
 *		expires_at of a hold of ttl_usecs microseconds that starts at now:
 *		the same instant whatever the session's TimeZone.  Errors: 22008
 *		when it falls outside the timestamp range (a clock pinned near its
 *		end).
 */
TimestampTz
InventoryExpiry(TimestampTz now, int64 ttl_usecs)
{
	TimestampTz expires_at;

	if (pg_add_s64_overflow(now, ttl_usecs, &expires_at) ||
		!IS_VALID_TIMESTAMP(expires_at))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("expiry of the reservation is out of range")));
	return expires_at;
}

/* Locations in line order: NULL (unpinned) before any name */
static int
CompareLocations(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

/* Lines in (sku, location) byte order: the lock order */
int
InventoryCompareLines(const void *a, const void *b)
{
	const InventoryLine *la = (const InventoryLine *) a;
	const InventoryLine *lb = (const InventoryLine *) b;
	int			c = strcmp(la->sku, lb->sku);

	return c != 0 ? c : CompareLocations(la->location, lb->location);
}

/*
 * SortAndMerge
 *		Sorts the lines by (sku, location) in byte order (the lock order)
 *		and merges lines of the same SKU and location into one with the
 *		summed quantity.  The total
 *		must fit an integer (README reserve_lines).  Errors: 22023.
 */
static void
SortAndMerge(InventoryLines *lines)
{
	int			i;
	int			out = 0;
	int64		total = 0;

	qsort(lines->items, lines->count, sizeof(InventoryLine),
		  InventoryCompareLines);
	for (i = 0; i < lines->count; i++)
	{
		total += lines->items[i].quantity;	/* at most 100 * 2^31: no overflow */
		if (out > 0 && InventoryCompareLines(&lines->items[out - 1],
											 &lines->items[i]) == 0)
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

/* The JSON type of v, for messages */
static const char *
JsonTypeName(const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return "null";
		case jbvString:
			return "a string";
		case jbvNumeric:
			return "a number";
		case jbvBool:
			return "a boolean";
		case jbvBinary:
			return JsonContainerIsObject(v->val.binary.data) ? "an object" :
				"an array";
		default:
			return "not a scalar";
	}
}

/* The form of a line every error of one line shows */
#define LINE_HINT(pins) \
	((pins) ? "Pass lines as [{\"sku\": \"A\", \"quantity\": 2}, ...]; a line may also name a \"location\"." : \
	 "Pass lines as [{\"sku\": \"A\", \"quantity\": 2}, ...].")

/*
 * LineError
 *		Raises 22023 for element elem of lines: "lines[elem] what", or with
 *		key "lines[elem].key what"; detail (or NULL) says what was given.
 */
static void
LineError(int elem, const char *key, const char *what, const char *detail,
		  bool pins)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 key ? errmsg("lines[%d].%s %s", elem, key, what) :
			 errmsg("lines[%d] %s", elem, what),
			 detail ? errdetail("%s", detail) : 0,
			 errhint("%s", LINE_HINT(pins))));
}

/*
 * LineQuantity
 *		A JSON number with an integral value from 1 to 2147483647 (2, 2.0
 *		and 2e0 are the same).  Errors: 22023.
 */
static int64
LineQuantity(int elem, JsonbValue *v, bool pins)
{
	char	   *digits;
	char	   *given;
	char	   *p;
	int64		q = 0;

	if (v->type != jbvNumeric)
		LineError(elem, "quantity", "must be a JSON number",
				  psprintf("It is %s.", JsonTypeName(v)), pins);
	digits = numeric_normalize(v->val.numeric);
	given = psprintf("The value given is %s.", digits);
	if (strchr(digits, '.') != NULL || strchr(digits, 'N') != NULL)
		LineError(elem, "quantity", "must be a whole number", given, pins);
	p = digits;
	if (*p == '-')
		LineError(elem, "quantity", "must be at least 1", given, pins);
	for (; *p; p++)
	{
		if (*p < '0' || *p > '9')
			LineError(elem, "quantity", "must be a whole number", given, pins);
		q = q * 10 + (*p - '0');
		if (q > PG_INT32_MAX)
			LineError(elem, "quantity", "must be at most 2147483647", given,
					  pins);
	}
	if (q < 1)
		LineError(elem, "quantity", "must be at least 1", given, pins);
	return q;
}

/*
 * LineKeys
 *		Checks that the object of line elem has no key but "sku",
 *		"quantity" and, when pins, "location" (the first other key, in
 *		jsonb's key order, is named), and has the first two.  Errors: 22023.
 */
static void
LineKeys(int elem, JsonbContainer *obj, bool pins)
{
	JsonbIterator *it = JsonbIteratorInit(obj);
	JsonbValue	v;
	JsonbIteratorToken tok;
	bool		has_sku = false;
	bool		has_qty = false;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *key;

		if (tok != WJB_KEY)
			continue;
		key = pnstrdup(v.val.string.val, v.val.string.len);
		if (strcmp(key, "sku") == 0)
			has_sku = true;
		else if (strcmp(key, "quantity") == 0)
			has_qty = true;
		else if (!(pins && strcmp(key, "location") == 0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("lines[%d] has an unexpected key \"%s\"", elem, key),
					 errdetail(pins ?
							   "A line has the keys \"sku\" and \"quantity\", and may have \"location\"." :
							   strcmp(key, "location") == 0 ?
							   "amend keeps the locations to the allocation policy: its lines have only the keys \"sku\" and \"quantity\"." :
							   "A line has exactly the keys \"sku\" and \"quantity\"."),
					 errhint("%s", LINE_HINT(pins))));
	}
	if (!has_sku || !has_qty)
		LineError(elem, NULL, has_sku ? "has no key \"quantity\"" :
				  "has no key \"sku\"", NULL, pins);
}

/*
 * LineName
 *		The string value v of key of line elem, checked as an identifier
 *		(canonical: a reservation creates it).  Errors: 22023.
 */
static char *
LineName(int elem, const char *key, JsonbValue *v, bool pins)
{
	char	   *argname = psprintf("lines[%d].%s", elem, key);

	if (v->type != jbvString)
		LineError(elem, key, "must be a JSON string",
				  psprintf("It is %s.", JsonTypeName(v)), pins);
	CheckIdentifier(argname, v->val.string.val, v->val.string.len,
					INVENTORY_NAME_MAX_CHARS, NAME_CANONICAL);
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/*
 * InventoryParseLines
 *		Reads reserve_lines' argument: a non-empty JSON array of at most 100
 *		objects with exactly the keys "sku" (a string within the identifier
 *		limits) and "quantity" (see LineQuantity), and, when pins is true,
 *		optionally "location" (a location name: the line is held only
 *		there).  Fills lines sorted and merged by (sku, location).  Every
 *		error of a line names it and its key: lines[2].sku, lines[0].location
 *		(from 0, in the order given).  Errors: 22023.
 */
void
InventoryParseLines(Jsonb *jb, bool pins, InventoryLines *lines)
{
	int			n;
	int			i;

	if (!JB_ROOT_IS_ARRAY(jb) || JB_ROOT_IS_SCALAR(jb))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lines must be a JSON array"),
				 errdetail("It is %s.", JB_ROOT_IS_OBJECT(jb) ? "an object" :
						   "a scalar"),
				 errhint("%s", LINE_HINT(pins))));
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
		JsonbValue	loc;

		if (elem == NULL || elem->type != jbvBinary ||
			!JsonContainerIsObject(elem->val.binary.data))
			LineError(i, NULL, "must be a JSON object",
					  elem ? psprintf("It is %s.", JsonTypeName(elem)) : NULL,
					  pins);
		obj = elem->val.binary.data;
		LineKeys(i, obj, pins);
		getKeyJsonValueFromContainer(obj, "sku", 3, &sku);
		getKeyJsonValueFromContainer(obj, "quantity", 8, &qty);
		lines->items[i].location = NULL;
		lines->items[i].available = -1;
		lines->items[i].sku = LineName(i, "sku", &sku, pins);
		if (strcmp(lines->items[i].sku, "*") == 0)
			LineError(i, "sku", "\"*\" is reserved for grants", NULL, pins);
		if (pins &&
			getKeyJsonValueFromContainer(obj, "location", 8, &loc) != NULL)
			lines->items[i].location = LineName(i, "location", &loc, pins);
		lines->items[i].quantity = LineQuantity(i, &qty, pins);
	}
	SortAndMerge(lines);
}

/*
 * InventoryCheckName
 *		Checks a tenant, SKU or location name given as an element of an
 *		array (argname names it in messages) against the identifier limits
 *		(flags as for InventoryNameArg).  Errors: 22023.
 */
void
InventoryCheckName(const char *argname, const char *s, int flags)
{
	CheckIdentifier(argname, s, strlen(s), INVENTORY_NAME_MAX_CHARS, flags);
}

/* The single line of reserve(): sku and quantity already checked. */
void
InventoryOneLine(const char *sku, int32 quantity, InventoryLines *lines)
{
	lines->count = 1;
	lines->total = quantity;
	lines->items = palloc(sizeof(InventoryLine));
	lines->items[0].sku = pstrdup(sku);
	lines->items[0].location = NULL;
	lines->items[0].quantity = quantity;
	lines->items[0].available = -1;
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
			InventoryCompareLines(&a->items[i], &b->items[i]) != 0)
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
	{
		appendStringInfo(&buf, "%s%s x " INT64_FORMAT, i > 0 ? ", " : "",
						 lines->items[i].sku, lines->items[i].quantity);
		if (lines->items[i].location != NULL)
			appendStringInfo(&buf, " at %s", lines->items[i].location);
	}
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

/* texts as a text[] Datum; a NULL item is a NULL element */
Datum
InventoryTextArray(const char *const *items, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(n, 1));
	int			dims[1] = {n};
	int			lbs[1] = {1};
	int			i;

	if (n == 0)
		return PointerGetDatum(construct_empty_array(TEXTOID));
	for (i = 0; i < n; i++)
	{
		nulls[i] = items[i] == NULL;
		elems[i] = nulls[i] ? (Datum) 0 : CStringGetTextDatum(items[i]);
	}
	return PointerGetDatum(construct_md_array(elems, nulls, 1, dims, lbs,
											  TEXTOID, -1, false,
											  TYPALIGN_INT));
}

/* bigints as an int8[] Datum */
Datum
InventoryInt8Array(const int64 *items, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		elems[i] = Int64GetDatum(items[i]);
	return PointerGetDatum(construct_array(elems, n, INT8OID, 8,
										   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/*
 * InventoryUnknownSku
 *		Raises IN002: the tenant never stocked the SKU.  hint NULL gives the
 *		usual hint.
 */
void
InventoryUnknownSku(const char *tenant, const char *sku, const char *hint)
{
	InventoryUnknownSkus(tenant, 1, &sku, hint);
}

/*
 * InventoryUnknownSkus
 *		Raises IN002 for the n (at least 1) SKUs skus, sorted, that the
 *		tenant never stocked: the message names the first, the DETAIL lists
 *		them all, so that one error tells a cart everything it must drop.
 *		hint NULL gives the usual hint.
 */
void
InventoryUnknownSkus(const char *tenant, int n, const char *const *skus,
					 const char *hint)
{
	StringInfoData list;
	int			i;

	Assert(n >= 1);
	initStringInfo(&list);
	for (i = 0; i < n; i++)
		appendStringInfo(&list, "%s\"%s\"", i > 0 ? ", " : "", skus[i]);
	ereport(ERROR,
			(errcode(ERRCODE_INVENTORY_UNKNOWN_OBJECT),
			 errmsg("SKU \"%s\" is not stocked for tenant \"%s\"", skus[0], tenant),
			 n == 1 ? errdetail("Not stocked for the tenant: %s.", list.data) :
			 errdetail("Not stocked for the tenant, %d SKUs: %s.", n, list.data),
			 errhint("%s", hint ? hint : "An operator creates a SKU by restocking it (inventory.restock) or registering it (inventory.register_sku).")));
}

/*
 * InventoryKeyReused
 *		Raises IN001: the request key was used with a different payload;
 *		detail says what is stored and what was asked, hint what to do.
 */
void
InventoryKeyReused(const char *key, const char *detail, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVENTORY_KEY_REUSED),
			 errmsg("request key \"%s\" was already used with a different payload",
					key),
			 errdetail("%s", detail),
			 errhint("%s", hint)));
}

/*
 * InventoryBrokenSku
 *		Raises XX001 (data_corrupted): the SKU does not hold the units a
 *		reservation holds in it, which only a hand change of its counters
 *		can cause (check_invariants names it).  expire_due skips such a
 *		reservation and goes on with the others.
 */
void
InventoryBrokenSku(const char *tenant, const char *sku, int64 units)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("SKU \"%s\" of tenant \"%s\" does not hold the " INT64_FORMAT " units its reservations hold",
					sku, tenant, units),
			 errdetail("Its counters were changed outside the pg_inventory functions."),
			 errhint("SELECT * FROM inventory.check_invariants() shows what is broken; repair the counters to match the ledger and the reservations.")));
}

/*
 * The closed lists behind the CHECK constraints of 0.6 (README "States"
 * and "Events"): the states of the reservation state machine and the types
 * of the outbox events.  A value is checked by comparing its bytes with
 * each entry, so "Pending" or "pending " is no state.
 */
static const char *const reservation_states[] = {
	"pending", "confirmed", "cancelled", "expired", "rejected", "compensated"
};

static const char *const event_types[] = {
	"reservation.reserved", "reservation.confirmed", "reservation.cancelled",
	"reservation.expired", "reservation.compensated", "reservation.extended",
	"reservation.amended", "stock.restocked", "stock.adjusted",
	"stock.out_of_stock", "stock.back_in_stock", "stock.low"
};

/* Whether the text t is one of the n strings of list. */
static bool
InList(text *t, const char *const *list, int n)
{
	const char *s = VARDATA_ANY(t);
	size_t		len = VARSIZE_ANY_EXHDR(t);
	int			i;

	for (i = 0; i < n; i++)
		if (strlen(list[i]) == len && memcmp(list[i], s, len) == 0)
			return true;
	return false;
}

PG_FUNCTION_INFO_V1(inventory_is_reservation_state);
PG_FUNCTION_INFO_V1(inventory_is_event_type);

/*
 * inventory_is_reservation_state
 *		is_reservation_state(state text) RETURNS boolean, IMMUTABLE STRICT
 *
 * Whether state is one of the six reservation states.  The CHECK
 * constraints reservation_state_valid and reservation_transition_state_valid
 * (0.6) call it.  No errors.
 */
Datum
inventory_is_reservation_state(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(InList(PG_GETARG_TEXT_PP(0), reservation_states,
						  lengthof(reservation_states)));
}

/*
 * inventory_is_event_type
 *		is_event_type(event_type text) RETURNS boolean, IMMUTABLE STRICT
 *
 * Whether event_type is one of the twelve outbox event types.  The CHECK
 * constraint outbox_event_type_valid (0.6) calls it.  A new event type
 * needs a schema version whose upgrade step revalidates the constraint;
 * a type is never removed from this list (stored events keep it).  No
 * errors.
 */
Datum
inventory_is_event_type(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(InList(PG_GETARG_TEXT_PP(0), event_types,
						  lengthof(event_types)));
}
