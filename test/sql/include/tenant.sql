-- include/tenant.sql: the views of one test file's tenants, those whose
-- name begins with :prefix (set first: \set prefix t010).  counts: the rows
-- they own; stk: their stock, and the columns in :stk_extra when it is set
-- (\set stk_extra ', slots'); and :oc, the outcome columns of a reservation
-- function without raw ids or timestamps.
\set tenants :prefix '%'
\if :{?stk_extra}
\else
\set stk_extra ''
\endif
CREATE TEMP VIEW counts AS
SELECT (SELECT count(*) FROM inventory.reservation r WHERE r.tenant LIKE :'tenants') AS reservations,
       (SELECT count(*) FROM inventory.reservation_line l
          JOIN inventory.reservation r ON r.id = l.reservation_id
         WHERE r.tenant LIKE :'tenants') AS lines,
       (SELECT count(*) FROM inventory.reservation_transition t
          JOIN inventory.reservation r ON r.id = t.reservation_id
         WHERE r.tenant LIKE :'tenants') AS transitions,
       (SELECT count(*) FROM inventory.outbox o WHERE o.tenant LIKE :'tenants') AS events,
       (SELECT count(*) FROM inventory.stock_ledger g WHERE g.tenant LIKE :'tenants') AS ledger;
CREATE TEMP VIEW stk AS
SELECT tenant, sku, available, reserved, consumed :stk_extra
  FROM inventory.stock WHERE tenant LIKE :'tenants';
\set oc 'status, state, applied, reservation_id IS NOT NULL AS has_id, sku, quantity, expires_at - current_setting(''pg_inventory.frozen_now'')::timestamptz AS expires_in'
