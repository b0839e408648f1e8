-- test/bench/demo/shop_cart.sql: a shopper checks out a cart of 2 to 4
-- lines at once (inventory.reserve_lines: all lines are held or none).
-- The lines are left to the tenant's allocation policy (which location
-- serves them), except in a click and collect cart (20%): its first line
-- names the location "store" and is held there only.  Then the shopper
-- confirms (70%: 6% first raise the first line by one unit with
-- inventory.amend, when the cart pins nothing; 4% first extend the hold by
-- 30 minutes with inventory.extend), cancels (15%) or walks away (15%,
-- held for 2 seconds, then expired).  The same SKU may appear on two
-- lines; the extension sums them.  Runs as role shop_app.
\set tenant random(1, 2)
\set lines random(2, 4)
\set s1 random_exponential(1, 300, 8)
\set s2 random_exponential(1, 300, 8)
\set s3 random_exponential(1, 300, 8)
\set s4 random_exponential(1, 300, 8)
\set q1 random(1, 2)
\set q2 random(1, 2)
\set q3 random(1, 2)
\set q4 random(1, 2)
\set key random(1, 1000000000000000)
\set fate random(1, 100)
\set pin 0
\if random(1, 100) <= 20
\set pin 1
\set s1 random_exponential(1, 40, 4)
\set q1 1
\endif
\if :fate > 85
\set ttl 2
\else
\set ttl 900
\endif
SELECT status FROM inventory.reserve_lines((ARRAY['acme', 'globex'])[:tenant::int],
	concat('cart-', :client_id::int, '-', :key::bigint),
	(SELECT jsonb_agg(jsonb_build_object('sku', concat('sku-', lpad(s::text, 4, '0')), 'quantity', q)
	                  || CASE WHEN i = 1 AND :pin::int = 1 THEN jsonb_build_object('location', 'store')
	                          ELSE '{}'::jsonb END ORDER BY i)
	   FROM (VALUES (1, :s1::int, :q1::int), (2, :s2::int, :q2::int),
	                (3, :s3::int, :q3::int), (4, :s4::int, :q4::int)) AS l(i, s, q)
	  WHERE i <= :lines::int),
	make_interval(secs => :ttl::int));
\if :fate <= 70
\if :fate <= 6
\if :pin = 0
SELECT status FROM inventory.amend((ARRAY['acme', 'globex'])[:tenant::int],
	concat('cart-', :client_id::int, '-', :key::bigint),
	(SELECT jsonb_agg(jsonb_build_object('sku', concat('sku-', lpad(s::text, 4, '0')),
	                                     'quantity', q + CASE WHEN i = 1 THEN 1 ELSE 0 END) ORDER BY i)
	   FROM (VALUES (1, :s1::int, :q1::int), (2, :s2::int, :q2::int),
	                (3, :s3::int, :q3::int), (4, :s4::int, :q4::int)) AS l(i, s, q)
	  WHERE i <= :lines::int));
\endif
\elif :fate <= 10
SELECT status FROM inventory.extend((ARRAY['acme', 'globex'])[:tenant::int],
	concat('cart-', :client_id::int, '-', :key::bigint), clock_timestamp() + interval '30 minutes');
\endif
SELECT status FROM inventory.confirm((ARRAY['acme', 'globex'])[:tenant::int],
	concat('cart-', :client_id::int, '-', :key::bigint));
\elif :fate <= 85
SELECT status FROM inventory.cancel((ARRAY['acme', 'globex'])[:tenant::int],
	concat('cart-', :client_id::int, '-', :key::bigint), 'payment declined');
\endif
