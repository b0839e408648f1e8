/*
 * sql/pg_inventory--0.8--0.9.sql
 *
 * Upgrade step 0.8 -> 0.9: finished reservations and the transition log
 * leave by rings (issue #12, goal 4; README "History retention: rings").
 *	- inventory.reservation, reservation_line and reservation_transition
 *	  become tables partitioned by the reservation id modulo 4 into four
 *	  rings each (reservation_ring_0..3, reservation_line_ring_0..3,
 *	  reservation_transition_ring_0..3); a new reservation id is a sequence
 *	  number times 4 plus the current ring (sequence
 *	  inventory.reservation_ring, function inventory._reservation_id), so
 *	  the id names its ring;
 *	- purge_history removes finished reservations a ring at a time, by
 *	  truncating the ring's three partitions once every reservation in it
 *	  finished before the retention, never row by row: a transaction held
 *	  open elsewhere no longer leaves the purged rows behind as dead rows;
 *	- the outbox's foreign key to reservation goes (events live in the
 *	  outbox's own rings and may outlive their reservation's ring).
 * Every row is copied unchanged into the ring of its reservation id (old
 * ids keep their values; new ids are above them).  The keys are declared
 * on each partition (built after the copy, with the foreign keys): the id
 * and the transition id stay unique, the request key unique per tenant in
 * each ring and, through reserve's lock on the key, across the rings.  The
 * views pending_hold and reservation_metrics keep their definitions and
 * privileges; the tables' privileges (on the tables and on their columns)
 * are granted on the new tables, their storage parameters set on each ring
 * and their statistics targets on the new columns; what else a DBA
 * attached to them (a trigger, a publication, a view, a policy, an index,
 * a foreign key to them, extended statistics, ...) refuses the step with
 * 2BP01, listing them, and nothing changes.  The copy holds the three
 * tables exclusively for as long as it takes.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_inventory UPDATE TO '0.9'" to load this file. \quit

DO $$
BEGIN
	IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'pg_inventory can only be updated at READ COMMITTED'
			USING ERRCODE = 'active_sql_transaction',
				  HINT = 'Run ALTER EXTENSION pg_inventory UPDATE TO ''0.9'' in a transaction of its own at the default isolation level.';
	END IF;
END
$$;

-- inventory.reservation first, which every call locks (ACCESS SHARE)
-- before anything else: the calls in flight end, those that start wait
LOCK TABLE inventory.reservation, inventory.reservation_line,
	inventory.reservation_transition, inventory.outbox IN ACCESS EXCLUSIVE MODE;

-- What a DBA attached to the three tables of 0.8 that this step cannot
-- carry to the partitioned tables refuses the step, and nothing changes:
-- a trigger, a publication, a view or rule, a row security policy, an
-- index, a foreign key to them, extended statistics, a column or
-- constraint of their own, a changed default, column options, TOAST
-- parameters, a replica identity, another owner, a sequence owned by a
-- column, a publication that would publish the rings under their names,
-- anything else that depends on a table or its row type.  (Storage
-- parameters and statistics targets are carried, below; table and column
-- privileges too, granted by the extension's owner.)
DO $$
DECLARE
	t record;
	attached text;
	found text;
BEGIN
	FOR t IN SELECT * FROM (VALUES
		('inventory.reservation'::regclass,
		 ARRAY['id', 'tenant', 'request_key', 'state', 'expires_at', 'version',
			   'reason', 'created_at', 'updated_at', 'request'],
		 ARRAY['reservation_pkey', 'reservation_request_key_unique',
			   'reservation_state_valid', 'reservation_expiry_unless_rejected',
			   'reservation_version_positive', 'reservation_reason_length',
			   'reservation_request_array'],
		 ARRAY['reservation_pkey', 'reservation_request_key_unique',
			   'reservation_pending_due', 'reservation_finished'],
		 ARRAY['id=nextval(''reservation_id_seq''::regclass)', 'version=1'],
		 ARRAY['reservation_line_reservation_fk', 'reservation_transition_reservation_fk',
			   'outbox_reservation_fk'],
		 'inventory.reservation_id_seq'),
		('inventory.reservation_line'::regclass,
		 ARRAY['reservation_id', 'tenant', 'sku', 'quantity', 'location', 'available'],
		 ARRAY['reservation_line_unique', 'reservation_line_reservation_fk',
			   'reservation_line_sku_fk', 'reservation_line_location_fk',
			   'reservation_line_quantity_positive', 'reservation_line_available_nonneg'],
		 ARRAY['reservation_line_unique'],
		 ARRAY[]::text[], ARRAY[]::text[], NULL),
		('inventory.reservation_transition'::regclass,
		 ARRAY['id', 'reservation_id', 'from_state', 'to_state', 'reason', 'actor',
			   'version', 'created_at'],
		 ARRAY['reservation_transition_pkey', 'reservation_transition_reservation_fk',
			   'reservation_transition_one_per_version', 'reservation_transition_state_valid'],
		 ARRAY['reservation_transition_pkey', 'reservation_transition_one_per_version',
			   'reservation_transition_created_at'],
		 ARRAY['id=nextval(''reservation_transition_id_seq''::regclass)'],
		 ARRAY[]::text[], 'inventory.reservation_transition_id_seq')
		) AS v(rel, cols, cons, idxs, defs, fks_to, seq)
	LOOP
		SELECT pg_catalog.string_agg(a.what, '; ' ORDER BY a.what) INTO found
		  FROM (SELECT pg_catalog.format('trigger %I', g.tgname) AS what
				  FROM pg_catalog.pg_trigger g
				 WHERE g.tgrelid = t.rel AND NOT g.tgisinternal
				UNION ALL
				SELECT pg_catalog.format('publication %I', p.pubname)
				  FROM pg_catalog.pg_publication_rel r
				  JOIN pg_catalog.pg_publication p ON p.oid = r.prpubid
				 WHERE r.prrelid = t.rel
				UNION ALL
				SELECT DISTINCT pg_catalog.format('view or rule of %s', w.ev_class::regclass)
				  FROM pg_catalog.pg_depend d
				  JOIN pg_catalog.pg_rewrite w ON d.classid = 'pg_catalog.pg_rewrite'::regclass
				   AND d.objid = w.oid
				 WHERE d.refclassid = 'pg_catalog.pg_class'::regclass
				   AND d.refobjid = t.rel
				   AND w.ev_class NOT IN (t.rel, 'inventory.pending_hold'::regclass,
										  'inventory.reservation_metrics'::regclass)
				UNION ALL
				SELECT pg_catalog.format('policy %I', y.polname)
				  FROM pg_catalog.pg_policy y WHERE y.polrelid = t.rel
				UNION ALL
				SELECT 'row level security' FROM pg_catalog.pg_class c
				 WHERE c.oid = t.rel AND c.relrowsecurity
				UNION ALL
				SELECT pg_catalog.format('index %s', i.indexrelid::regclass)
				  FROM pg_catalog.pg_index i
				 WHERE i.indrelid = t.rel
				   AND (SELECT c.relname FROM pg_catalog.pg_class c
						 WHERE c.oid = i.indexrelid) <> ALL (t.idxs)
				UNION ALL
				SELECT pg_catalog.format('foreign key %I of %s', f.conname, f.conrelid::regclass)
				  FROM pg_catalog.pg_constraint f
				 WHERE f.confrelid = t.rel AND f.conname <> ALL (t.fks_to)
				UNION ALL
				SELECT pg_catalog.format('statistics %I', x.stxname)
				  FROM pg_catalog.pg_statistic_ext x
				 WHERE x.stxrelid = t.rel
				UNION ALL
				-- a column of its own, and its values
				SELECT pg_catalog.format('column %I', a.attname)
				  FROM pg_catalog.pg_attribute a
				 WHERE a.attrelid = t.rel AND a.attnum > 0 AND NOT a.attisdropped
				   AND a.attname <> ALL (t.cols)
				UNION ALL
				SELECT pg_catalog.format('constraint %I', k.conname)
				  FROM pg_catalog.pg_constraint k
				 WHERE k.conrelid = t.rel AND k.conname <> ALL (t.cons)
				UNION ALL
				SELECT pg_catalog.format('default of column %I', a.attname)
				  FROM pg_catalog.pg_attrdef f
				  JOIN pg_catalog.pg_attribute a ON a.attrelid = f.adrelid AND a.attnum = f.adnum
				 WHERE f.adrelid = t.rel
				   -- (printed without the schema, which is on the script's path)
				   AND a.attname || '=' || pg_catalog.replace(pg_catalog.pg_get_expr(f.adbin,
						f.adrelid), 'inventory.', '') <> ALL (t.defs)
				UNION ALL
				SELECT pg_catalog.format('n_distinct, storage or compression of column %I', a.attname)
				  FROM pg_catalog.pg_attribute a
				  JOIN pg_catalog.pg_type y ON y.oid = a.atttypid
				 WHERE a.attrelid = t.rel AND a.attnum > 0 AND NOT a.attisdropped
				   AND (EXISTS (SELECT 1 FROM pg_catalog.unnest(a.attoptions) o
								 WHERE o LIKE 'n\_distinct%')
						OR a.attcompression <> '' OR a.attstorage <> y.typstorage)
				UNION ALL
				SELECT 'storage parameters of its TOAST table'
				  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_class x ON x.oid = c.reltoastrelid
				 WHERE c.oid = t.rel AND x.reloptions IS NOT NULL
				UNION ALL
				SELECT 'replica identity' FROM pg_catalog.pg_class c
				 WHERE c.oid = t.rel AND c.relreplident <> 'd'
				UNION ALL
				SELECT pg_catalog.format('owner %I (the extension''s is %I)',
						pg_catalog.pg_get_userbyid(c.relowner), pg_catalog.pg_get_userbyid(e.extowner))
				  FROM pg_catalog.pg_class c, pg_catalog.pg_extension e
				 WHERE c.oid = t.rel AND e.extname = 'pg_inventory'
				   AND c.relowner <> e.extowner
				UNION ALL
				SELECT pg_catalog.format('sequence %s owned by one of its columns', d.objid::regclass)
				  FROM pg_catalog.pg_depend d
				 WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.deptype = 'a'
				   AND d.refclassid = 'pg_catalog.pg_class'::regclass
				   AND d.refobjid = t.rel AND d.refobjsubid > 0
				   AND d.objid IS DISTINCT FROM t.seq::regclass
				   AND (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = d.objid) = 'S'
				UNION ALL
				-- anything else that depends on the table or its row type: a
				-- function, a column of its type, a table inheriting from it
				SELECT DISTINCT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid)
				  FROM pg_catalog.pg_depend d
				 WHERE d.deptype = 'n'
				   AND ((d.refclassid = 'pg_catalog.pg_class'::regclass
						 AND d.refobjid = t.rel)
					 OR (d.refclassid = 'pg_catalog.pg_type'::regclass
						 AND d.refobjid = (SELECT c.reltype FROM pg_catalog.pg_class c
											WHERE c.oid = t.rel)))
				   -- (views: above; its own constraints and defaults: above)
				   AND d.classid NOT IN ('pg_catalog.pg_rewrite'::regclass,
						'pg_catalog.pg_constraint'::regclass, 'pg_catalog.pg_attrdef'::regclass)) a;
		IF found IS NOT NULL THEN
			attached := pg_catalog.concat_ws('; ', attached,
				pg_catalog.format('%s: %s', t.rel, found));
		END IF;
	END LOOP;
	-- a publication of every table, or of the schema, would publish the
	-- rings under their own names
	SELECT pg_catalog.concat_ws('; ', attached, pg_catalog.string_agg(pg_catalog.format(
			'publication %I (of every table or of schema inventory, without publish_via_partition_root)',
			p.pubname), '; ' ORDER BY p.pubname)) INTO attached
	  FROM pg_catalog.pg_publication p
	 WHERE NOT p.pubviaroot
	   AND (p.puballtables OR EXISTS (SELECT 1 FROM pg_catalog.pg_publication_namespace n
									  WHERE n.pnpubid = p.oid
										AND n.pnnspid = 'inventory'::regnamespace));
	IF attached <> '' THEN
		RAISE EXCEPTION 'the reservation tables have objects attached that the update to 0.9 cannot carry: %', attached
			USING ERRCODE = 'dependent_objects_still_exist',
				  DETAIL = '0.9 replaces inventory.reservation, reservation_line and reservation_transition by tables partitioned into four rings each; the update would drop these with the tables of 0.8.',
				  HINT = 'Save their definitions, drop them, run the update, and create them again on the new tables (a trigger, an index or a policy on a partitioned table applies to every ring; a publication needs publish_via_partition_root = true to publish the rings under the tables'' names).';
	END IF;
END
$$;

-- the tables of 0.8 step aside with their indexes (whose names are the
-- schema's); the outbox's foreign key to them goes, and the sequences are
-- given up (the new tables own them)
ALTER TABLE inventory.outbox DROP CONSTRAINT outbox_reservation_fk;
ALTER TABLE inventory.reservation_transition RENAME TO reservation_transition_0_8;
ALTER TABLE inventory.reservation_line RENAME TO reservation_line_0_8;
ALTER TABLE inventory.reservation RENAME TO reservation_0_8;
ALTER INDEX inventory.reservation_pkey RENAME TO reservation_0_8_pkey;
ALTER INDEX inventory.reservation_request_key_unique RENAME TO reservation_0_8_request_key_unique;
ALTER INDEX inventory.reservation_pending_due RENAME TO reservation_0_8_pending_due;
ALTER INDEX inventory.reservation_finished RENAME TO reservation_0_8_finished;
ALTER INDEX inventory.reservation_line_unique RENAME TO reservation_line_0_8_unique;
ALTER INDEX inventory.reservation_transition_pkey RENAME TO reservation_transition_0_8_pkey;
ALTER INDEX inventory.reservation_transition_one_per_version
	RENAME TO reservation_transition_0_8_one_per_version;
ALTER INDEX inventory.reservation_transition_created_at
	RENAME TO reservation_transition_0_8_created_at;
ALTER SEQUENCE inventory.reservation_id_seq OWNED BY NONE;
ALTER SEQUENCE inventory.reservation_transition_id_seq OWNED BY NONE;

/* ---------------------------------------------------------------------
 * The reservations' rings (0.9; README "History retention: rings").  See
 * the full script of 0.9 for the design; the same definitions follow.
 * ------------------------------------------------------------------- */
CREATE SEQUENCE inventory.reservation_ring AS smallint MINVALUE 0 MAXVALUE 3 START 0 NO CYCLE;
COMMENT ON SEQUENCE inventory.reservation_ring IS
	'The reservations'' current ring (its last_value, 0 to 3): new reservation ids end in it (id modulo 4). Moved on by purge_history only; never set it by hand. Not dumped by pg_dump: a restored database starts at ring 0 (any ring is safe to write to).';
COMMENT ON SEQUENCE inventory.reservation_id_seq IS
	'Sequence numbers of reservation ids (0.9): a new id is the next value times 4 plus the current ring (inventory._reservation_id).';

CREATE FUNCTION inventory._reservation_id(id_sequence regclass, ring_sequence regclass)
	RETURNS bigint
	LANGUAGE C VOLATILE STRICT
	AS 'MODULE_PATHNAME', 'inventory_reservation_id';
COMMENT ON FUNCTION inventory._reservation_id(regclass, regclass) IS
	'Default of reservation.id (0.9), called with inventory.reservation_id_seq and inventory.reservation_ring: the next value of the first times 4 plus the current ring (the last value of the second, read once per transaction), so that the id names its ring (id % 4) and ids still grow in the order they are drawn. Any ring is safe to write to: purge_history truncates a ring only while it holds its partitions exclusively, so never under a writer that has not committed, and only when every reservation in it finished before the retention. Internal: runs as the extension''s owner inside reserve. Errors: those of nextval, 42501 without SELECT or USAGE on the ring sequence, 22003 past the largest id (2^61 reservations).';

CREATE TABLE inventory.reservation (
	id			bigint NOT NULL DEFAULT inventory._reservation_id(
		'inventory.reservation_id_seq'::regclass, 'inventory.reservation_ring'::regclass),
	tenant		inventory.name_id NOT NULL,
	request_key inventory.request_key NOT NULL,
	state		text NOT NULL,
	expires_at	timestamptz,
	version		integer NOT NULL DEFAULT 1,
	reason		text,
	created_at	timestamptz NOT NULL,
	updated_at	timestamptz NOT NULL,
	request		jsonb,
	CONSTRAINT reservation_state_valid
		CHECK (inventory.is_reservation_state(state)),
	CONSTRAINT reservation_expiry_unless_rejected
		CHECK ((state = 'rejected') = (expires_at IS NULL)),
	CONSTRAINT reservation_version_positive CHECK (version >= 1),
	CONSTRAINT reservation_reason_length CHECK (char_length(reason) <= 1000),
	CONSTRAINT reservation_request_array CHECK (pg_catalog.jsonb_typeof(request) = 'array')
) PARTITION BY LIST ((id % 4));
-- expire_due reads pending reservations oldest first: this partial index
-- holds only pending rows, so its size follows the open reservations, not
-- the history.
CREATE INDEX reservation_pending_due ON inventory.reservation (expires_at, id)
	WHERE state = 'pending';
COMMENT ON TABLE inventory.reservation IS
	'One reservation per (tenant, request_key); state moves only through the pg_inventory functions. 0.9: partitioned by id % 4 into reservation_ring_0 to reservation_ring_3, so that purge_history removes finished reservations a ring at a time (TRUNCATE), never row by row; the id is unique and the request key is unique per tenant in every ring and, through reserve, across the rings.';
COMMENT ON COLUMN inventory.reservation.id IS 'Surrogate key, referenced by lines, transitions and events. 0.9: a sequence number times 4 plus the ring (id % 4) current when the reservation was made (inventory._reservation_id); ids grow but are not consecutive.';
COMMENT ON COLUMN inventory.reservation.tenant IS 'Tenant that made the reservation.';
COMMENT ON COLUMN inventory.reservation.request_key IS 'Idempotency key of the reserve call that created it.';
COMMENT ON COLUMN inventory.reservation.state IS 'pending, confirmed, cancelled, expired, rejected (stored insufficient outcome) or compensated.';
COMMENT ON COLUMN inventory.reservation.expires_at IS 'When a pending reservation expires (inclusive); NULL for rejected ones.';
COMMENT ON COLUMN inventory.reservation.version IS 'Starts at 1, incremented by every state change.';
COMMENT ON COLUMN inventory.reservation.reason IS 'Reason given by the last cancel or compensate, if any.';
COMMENT ON COLUMN inventory.reservation.created_at IS 'When the reserve call ran (pg_inventory clock).';
COMMENT ON COLUMN inventory.reservation.updated_at IS 'When the state last changed (pg_inventory clock).';
COMMENT ON COLUMN inventory.reservation.request IS
	'The idempotency payload of the reserve call when the lines do not say it (a request with pinned locations, or after amend): [{"sku": s, "quantity": n[, "location": l]}, ...] sorted by (sku, location, no location first); NULL otherwise.';
COMMENT ON INDEX inventory.reservation_pending_due IS 'Pending reservations by expiry, for expire_due.';
ALTER SEQUENCE inventory.reservation_id_seq OWNED BY inventory.reservation.id;

CREATE TABLE inventory.reservation_line (
	reservation_id bigint NOT NULL,
	tenant		inventory.name_id NOT NULL,
	sku			inventory.name_id NOT NULL,
	quantity	integer NOT NULL,
	location	inventory.name_id,
	available	bigint,
	CONSTRAINT reservation_line_quantity_positive CHECK (quantity >= 1),
	CONSTRAINT reservation_line_available_nonneg CHECK (available >= 0)
) PARTITION BY LIST ((reservation_id % 4));
COMMENT ON TABLE inventory.reservation_line IS
	'The lines of a reservation: one row per (sku, location) of its allocation with the units held there; rejected reservations keep their requested lines, one per (sku, pinned location or none). 0.9: partitioned by reservation_id % 4 into reservation_line_ring_0 to reservation_line_ring_3, beside their reservation''s ring.';
COMMENT ON COLUMN inventory.reservation_line.reservation_id IS 'The reservation.';
COMMENT ON COLUMN inventory.reservation_line.tenant IS 'The reservation''s tenant (kept for the stock foreign key).';
COMMENT ON COLUMN inventory.reservation_line.sku IS 'The SKU held.';
COMMENT ON COLUMN inventory.reservation_line.quantity IS 'Units of the SKU at the location (request lines of the same SKU and location summed); for a rejected line, the units requested.';
COMMENT ON COLUMN inventory.reservation_line.location IS 'Where the units are held; for a rejected line the pinned location, NULL when the line did not pin one.';
COMMENT ON COLUMN inventory.reservation_line.available IS 'Rejected lines only: the sellable units the line could use when it was refused (at its pinned location, else over all active locations); NULL otherwise.';

CREATE TABLE inventory.reservation_transition (
	id			bigint NOT NULL
		DEFAULT pg_catalog.nextval('inventory.reservation_transition_id_seq'::regclass),
	reservation_id bigint NOT NULL,
	from_state	text,
	to_state	text NOT NULL,
	reason		text,
	actor		text NOT NULL,
	version		integer NOT NULL,
	created_at	timestamptz NOT NULL,
	CONSTRAINT reservation_transition_state_valid
		CHECK (inventory.is_reservation_state(to_state))
) PARTITION BY LIST ((reservation_id % 4));
COMMENT ON TABLE inventory.reservation_transition IS
	'Transition log: one row per state change of a reservation, including the stored rejection (from NULL to rejected). 0.9: partitioned by reservation_id % 4 into reservation_transition_ring_0 to reservation_transition_ring_3, beside their reservation''s ring.';
COMMENT ON COLUMN inventory.reservation_transition.id IS 'Surrogate key in insertion order.';
COMMENT ON COLUMN inventory.reservation_transition.reservation_id IS 'The reservation.';
COMMENT ON COLUMN inventory.reservation_transition.from_state IS 'State before the change; NULL when the reservation was created.';
COMMENT ON COLUMN inventory.reservation_transition.to_state IS 'State after the change.';
COMMENT ON COLUMN inventory.reservation_transition.reason IS 'Reason given by the caller, or the rule that applied (expiry).';
COMMENT ON COLUMN inventory.reservation_transition.actor IS 'Role in effect when the call ran.';
COMMENT ON COLUMN inventory.reservation_transition.version IS 'Reservation version after the change.';
COMMENT ON COLUMN inventory.reservation_transition.created_at IS 'When the change happened (pg_inventory clock).';
ALTER SEQUENCE inventory.reservation_transition_id_seq OWNED BY inventory.reservation_transition.id;

CREATE INDEX reservation_finished ON inventory.reservation (updated_at, id)
	WHERE state <> 'pending';
COMMENT ON INDEX inventory.reservation_finished IS 'Finished reservations by their last change, for purge_history.';
CREATE INDEX reservation_transition_created_at
	ON inventory.reservation_transition USING brin (created_at);
COMMENT ON INDEX inventory.reservation_transition_created_at IS
	'Transitions by time (block ranges), for reservation_metrics.';

-- the rings' partitions, bare: their keys and foreign keys are built after
-- the copy (one index build and one check each instead of one per row)
DO $rings$
DECLARE
	k integer;
BEGIN
	FOR k IN 0..3 LOOP
		EXECUTE pg_catalog.format($f$
CREATE TABLE inventory.reservation_ring_%1$s PARTITION OF inventory.reservation
	FOR VALUES IN (%1$s);
CREATE TABLE inventory.reservation_line_ring_%1$s PARTITION OF inventory.reservation_line
	FOR VALUES IN (%1$s);
CREATE TABLE inventory.reservation_transition_ring_%1$s PARTITION OF inventory.reservation_transition
	FOR VALUES IN (%1$s);
$f$, k);
	END LOOP;
END
$rings$;

-- every row, unchanged, into the ring of its reservation id
INSERT INTO inventory.reservation (id, tenant, request_key, state, expires_at,
	version, reason, created_at, updated_at, request)
SELECT r.id, r.tenant, r.request_key, r.state, r.expires_at, r.version,
	r.reason, r.created_at, r.updated_at, r.request
FROM inventory.reservation_0_8 r;
INSERT INTO inventory.reservation_line (reservation_id, tenant, sku, quantity,
	location, available)
SELECT l.reservation_id, l.tenant, l.sku, l.quantity, l.location, l.available
FROM inventory.reservation_line_0_8 l;
INSERT INTO inventory.reservation_transition (id, reservation_id, from_state,
	to_state, reason, actor, version, created_at)
SELECT t.id, t.reservation_id, t.from_state, t.to_state, t.reason, t.actor,
	t.version, t.created_at
FROM inventory.reservation_transition_0_8 t;

-- the keys and foreign keys, as the full script of 0.9 declares them
ALTER TABLE inventory.reservation_line
	ADD CONSTRAINT reservation_line_sku_fk FOREIGN KEY (tenant, sku)
		REFERENCES inventory.sku (tenant, sku),
	ADD CONSTRAINT reservation_line_location_fk FOREIGN KEY (tenant, location)
		REFERENCES inventory.location (tenant, location);
DO $rings$
DECLARE
	k integer;
BEGIN
	FOR k IN 0..3 LOOP
		EXECUTE pg_catalog.format($f$
ALTER TABLE inventory.reservation_ring_%1$s
	ADD CONSTRAINT reservation_ring_%1$s_pkey PRIMARY KEY (id),
	ADD CONSTRAINT reservation_ring_%1$s_request_key_unique UNIQUE (tenant, request_key);
ALTER TABLE inventory.reservation_line_ring_%1$s
	ADD CONSTRAINT reservation_line_ring_%1$s_unique
		UNIQUE NULLS NOT DISTINCT (reservation_id, sku, location),
	ADD CONSTRAINT reservation_line_ring_%1$s_reservation_fk FOREIGN KEY (reservation_id)
		REFERENCES inventory.reservation_ring_%1$s (id);
ALTER TABLE inventory.reservation_transition_ring_%1$s
	ADD CONSTRAINT reservation_transition_ring_%1$s_pkey PRIMARY KEY (id),
	ADD CONSTRAINT reservation_transition_ring_%1$s_one_per_version
		UNIQUE (reservation_id, version),
	ADD CONSTRAINT reservation_transition_ring_%1$s_reservation_fk FOREIGN KEY (reservation_id)
		REFERENCES inventory.reservation_ring_%1$s (id);
COMMENT ON TABLE inventory.reservation_ring_%1$s IS 'Ring %1$s of inventory.reservation (0.9): the reservations whose id %% 4 is %1$s; a partition, read and written through inventory.reservation. purge_history truncates it with its lines and transitions when every reservation in it finished before the retention.';
COMMENT ON TABLE inventory.reservation_line_ring_%1$s IS 'Ring %1$s of inventory.reservation_line (0.9): the lines of the reservations of reservation_ring_%1$s; a partition, read and written through inventory.reservation_line.';
COMMENT ON TABLE inventory.reservation_transition_ring_%1$s IS 'Ring %1$s of inventory.reservation_transition (0.9): the transitions of the reservations of reservation_ring_%1$s; a partition, read and written through inventory.reservation_transition.';
COMMENT ON CONSTRAINT reservation_ring_%1$s_request_key_unique ON inventory.reservation_ring_%1$s IS 'A request key once per tenant in the ring (reserve keeps it once across the rings).';
$f$, k);
	END LOOP;
END
$rings$;

-- the views now read the new tables (the same definitions; they keep their
-- privileges and comments)
CREATE OR REPLACE VIEW inventory.pending_hold WITH (security_barrier) AS
SELECT r.tenant, r.request_key, r.id AS reservation_id, l.sku, l.location,
	   l.quantity, r.expires_at,
	   r.expires_at <= (SELECT inventory.clock()) AS due, r.created_at
  FROM inventory.reservation r
  JOIN inventory.reservation_line l ON l.reservation_id = r.id
 WHERE r.state = 'pending';

CREATE OR REPLACE VIEW inventory.reservation_metrics AS
WITH c AS MATERIALIZED (SELECT inventory.clock() AS now)
SELECT p.pending, p.due_unswept,
	   t.confirmed_last_minute, t.cancelled_last_minute,
	   t.expired_last_minute, t.rejected_last_minute,
	   t.compensated_last_minute,
	   t.confirmed_last_hour, t.cancelled_last_hour, t.expired_last_hour,
	   t.rejected_last_hour, t.compensated_last_hour,
	   p.oldest_pending_at
  FROM c
 CROSS JOIN LATERAL (
	SELECT count(*) AS pending,
		   count(*) FILTER (WHERE r.expires_at <= c.now) AS due_unswept,
		   min(r.created_at) AS oldest_pending_at
	  FROM inventory.reservation r
	 WHERE r.state = 'pending') p
 CROSS JOIN LATERAL (
	SELECT count(*) FILTER (WHERE x.to_state = 'confirmed' AND x.last_minute) AS confirmed_last_minute,
		   count(*) FILTER (WHERE x.to_state = 'cancelled' AND x.last_minute) AS cancelled_last_minute,
		   count(*) FILTER (WHERE x.to_state = 'expired' AND x.last_minute) AS expired_last_minute,
		   count(*) FILTER (WHERE x.to_state = 'rejected' AND x.last_minute) AS rejected_last_minute,
		   count(*) FILTER (WHERE x.to_state = 'compensated' AND x.last_minute) AS compensated_last_minute,
		   count(*) FILTER (WHERE x.to_state = 'confirmed') AS confirmed_last_hour,
		   count(*) FILTER (WHERE x.to_state = 'cancelled') AS cancelled_last_hour,
		   count(*) FILTER (WHERE x.to_state = 'expired') AS expired_last_hour,
		   count(*) FILTER (WHERE x.to_state = 'rejected') AS rejected_last_hour,
		   count(*) FILTER (WHERE x.to_state = 'compensated') AS compensated_last_hour
	  FROM (SELECT y.to_state, y.created_at > c.now - interval '1 minute' AS last_minute
			  FROM inventory.reservation_transition y
			 WHERE y.created_at > c.now - interval '1 hour'
			   AND y.created_at <= c.now) x) t;

/* ---------------------------------------------------------------------
 * Privileges: each new table gets every privilege its table of 0.8 had
 * (on the table and on its columns); the partitions, the ring sequence and
 * _reservation_id none (read the rows through the tables).  The carried
 * grants are the DBA's, not the extension's initial privileges, so that
 * pg_dump writes them.  Storage parameters (fillfactor, autovacuum) go to
 * each ring, statistics targets to the new tables' columns (and so to
 * every ring).
 * ------------------------------------------------------------------- */
REVOKE ALL ON SEQUENCE inventory.reservation_ring FROM PUBLIC;
REVOKE ALL ON FUNCTION inventory._reservation_id(regclass, regclass) FROM PUBLIC;
DO $$
DECLARE
	t record;
	a record;
	k integer;
	init aclitem[];
	opts text;
BEGIN
	FOR t IN SELECT * FROM (VALUES
		('reservation', 'reservation_0_8'),
		('reservation_line', 'reservation_line_0_8'),
		('reservation_transition', 'reservation_transition_0_8')) AS v(new, old)
	LOOP
		EXECUTE pg_catalog.format('REVOKE ALL ON inventory.%I FROM PUBLIC', t.new);
		FOR k IN 0..3 LOOP
			EXECUTE pg_catalog.format('REVOKE ALL ON inventory.%I FROM PUBLIC', t.new || '_ring_' || k);
		END LOOP;
		SELECT p.initprivs INTO init FROM pg_catalog.pg_init_privs p
		 WHERE p.objoid = ('inventory.' || t.new)::regclass
		   AND p.classoid = 'pg_catalog.pg_class'::regclass AND p.objsubid = 0;
		FOR a IN SELECT x.grantee, x.privilege_type, x.is_grantable
				   FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) x
				  WHERE c.oid = ('inventory.' || t.old)::regclass AND x.grantee <> c.relowner
		LOOP
			EXECUTE pg_catalog.format('GRANT %s ON inventory.%I TO %s%s', a.privilege_type, t.new,
				CASE a.grantee WHEN 0 THEN 'PUBLIC'
					 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END,
				CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
		END LOOP;
		FOR a IN SELECT c.attname, x.grantee, x.privilege_type, x.is_grantable
				   FROM pg_catalog.pg_attribute c, pg_catalog.aclexplode(c.attacl) x
				  WHERE c.attrelid = ('inventory.' || t.old)::regclass AND c.attnum > 0
					AND NOT c.attisdropped
		LOOP
			EXECUTE pg_catalog.format('GRANT %s (%I) ON inventory.%I TO %s%s',
				a.privilege_type, a.attname, t.new,
				CASE a.grantee WHEN 0 THEN 'PUBLIC'
					 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END,
				CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
		END LOOP;
		DELETE FROM pg_catalog.pg_init_privs
		 WHERE objoid = ('inventory.' || t.new)::regclass
		   AND classoid = 'pg_catalog.pg_class'::regclass AND objsubid > 0;
		IF init IS NULL THEN
			DELETE FROM pg_catalog.pg_init_privs
			 WHERE objoid = ('inventory.' || t.new)::regclass
			   AND classoid = 'pg_catalog.pg_class'::regclass AND objsubid = 0;
		ELSE
			UPDATE pg_catalog.pg_init_privs SET initprivs = init
			 WHERE objoid = ('inventory.' || t.new)::regclass
			   AND classoid = 'pg_catalog.pg_class'::regclass AND objsubid = 0;
		END IF;

		SELECT pg_catalog.array_to_string(c.reloptions, ', ') INTO opts
		  FROM pg_catalog.pg_class c WHERE c.oid = ('inventory.' || t.old)::regclass;
		IF opts IS NOT NULL THEN
			FOR k IN 0..3 LOOP
				EXECUTE pg_catalog.format('ALTER TABLE inventory.%I SET (%s)',
					t.new || '_ring_' || k, opts);
			END LOOP;
		END IF;
		FOR a IN SELECT c.attname, c.attstattarget FROM pg_catalog.pg_attribute c
				  WHERE c.attrelid = ('inventory.' || t.old)::regclass AND c.attnum > 0
					AND NOT c.attisdropped AND c.attstattarget >= 0 LOOP
			EXECUTE pg_catalog.format('ALTER TABLE inventory.%I ALTER COLUMN %I SET STATISTICS %s',
				t.new, a.attname, a.attstattarget);
		END LOOP;
	END LOOP;
END
$$;

ALTER EXTENSION pg_inventory DROP TABLE inventory.reservation_transition_0_8;
ALTER EXTENSION pg_inventory DROP TABLE inventory.reservation_line_0_8;
ALTER EXTENSION pg_inventory DROP TABLE inventory.reservation_0_8;
DROP TABLE inventory.reservation_transition_0_8, inventory.reservation_line_0_8,
	inventory.reservation_0_8;

-- pg_dump keeps the rows of every ring (and the id sequence's position; the
-- ring sequence is not kept: a restored database starts at ring 0)
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_ring_0', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_ring_1', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_ring_2', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_ring_3', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_line_ring_0', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_line_ring_1', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_line_ring_2', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_line_ring_3', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_transition_ring_0', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_transition_ring_1', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_transition_ring_2', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_transition_ring_3', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_transition_id_seq', '');

-- purge_history removes a ring at a time (retention.c)
COMMENT ON FUNCTION inventory.purge_history(interval, integer, boolean) IS
	'Retention: removes finished reservations (confirmed, cancelled, expired, rejected, compensated) with their lines and transitions, a ring at a time (0.9): every ring but the current one all of whose reservations finished (last change) more than older_than (0 to 10 years) ago by the pg_inventory clock is truncated, its three partitions together, never row by row; then the next ring becomes current once it is empty and the current ring''s oldest reservation was made more than older_than/2 ago. Finished reservations thus stay between older_than and about twice that, longer while a pending or recently changed reservation keeps its ring. With archive, first keeps each as one document in reservation_archive, at most max_rows (1 to 1000000) new documents per call: a ring goes once all its reservations are archived (without archive max_rows is not used: a ring goes whole). The units of removed confirmed reservations stay counted in purged_confirmed. Events stay: they leave by purge_published. A ring another transaction holds is left for a later call: every open transaction that touched the reservations holds every ring; the purge waits for such a holder at most 200 ms in the lock queue (calls wait behind it meanwhile), not at all for one older than 200 ms or prepared; one purge at a time (advisory lock, objsubid 20557). Run it in a transaction of its own: the rings it truncates stay locked until its transaction ends. A request key it removed no longer replays. Must run at READ COMMITTED. The worker runs it with pg_inventory.history_retention. Returns how many reservations it removed. Errors: 22023 bad argument, 25001 in a REPEATABLE READ or SERIALIZABLE transaction, 0A000 schema before 0.5.';

-- check_invariants checks that a request key is held once (invariants.c)
COMMENT ON FUNCTION inventory.check_invariants() IS
	'Returns one row per broken invariant (no rows when healthy), read in one snapshot: counts against the ledger (counts_match_ledger, counts_in_range), counts_nonnegative, reserved against pending lines, consumed against confirmed lines, transition log rows against reservation versions, one reservation per request key (request_key_once, 0.9: the rings keep a key unique per ring, reserve across them), slots against the SKU catalog, and the same per (sku, location); each slot''s guards (keep_units, level_watch) against the policy, level and slot count (slot_guards_match_policy, 0.6). The ledger is stock_ledger with stock_ledger_archive (records moved by archive_ledger); the confirmed lines include those of confirmed reservations purge_history removed (purged_confirmed). Errors: none of its own.';

-- purge_history archives a ring before it goes (retention.c)
COMMENT ON TABLE inventory.reservation_archive IS
	'Reservations that purge_history removed with archive => true: one row each, with the reservation, its lines and its transitions as one jsonb document. 0.9: written before their ring goes, at most max_rows a call, so it may also hold documents of reservations whose ring is still there (written again if they change). Nothing reads it but operators; a request key found here no longer replays once its reservation is gone (a reserve with it makes a new reservation).';
