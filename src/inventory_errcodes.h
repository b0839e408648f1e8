/*-------------------------------------------------------------------------
 *
 * src/inventory_errcodes.h
 *		The SQLSTATEs of pg_inventory (README "Errors").
 *
 * Class IN is the extension's own.  Standard codes (22023 invalid
 * argument, 42501 not authorised) come from utils/errcodes.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef INVENTORY_ERRCODES_H
#define INVENTORY_ERRCODES_H

#include "utils/elog.h"

/* request key reused with a different payload */
#define ERRCODE_INVENTORY_KEY_REUSED		MAKE_SQLSTATE('I','N','0','0','1')
/* unknown SKU where one must exist */
#define ERRCODE_INVENTORY_UNKNOWN_OBJECT	MAKE_SQLSTATE('I','N','0','0','2')
/* adjustment would make available negative */
#define ERRCODE_INVENTORY_WOULD_GO_NEGATIVE MAKE_SQLSTATE('I','N','0','0','3')
/* unknown location where one must exist (0.5 on) */
#define ERRCODE_INVENTORY_UNKNOWN_LOCATION	MAKE_SQLSTATE('I','N','0','0','4')

#endif							/* INVENTORY_ERRCODES_H */
