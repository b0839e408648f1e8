/*
 * sql/pg_inventory--0.7--0.8.sql
 *
 * Upgrade step 0.7 -> 0.8: an outbox that never bloats (issue #12, goal 4;
 * README "Outbox retention: rings").
 *	- inventory.outbox becomes a table partitioned by the new column ring
 *	  into three partitions, outbox_ring_0 to outbox_ring_2; the sequence
 *	  inventory.outbox_ring names the ring new events go to (the default
 *	  of ring, inventory._outbox_ring);
 *	- purge_published removes published events a ring at a time, by
 *	  truncating its partition (after moving its unpublished events and
 *	  dead letters to the current ring), never row by row: a transaction
 *	  held open elsewhere no longer leaves the purged rows behind as dead
 *	  rows.
 * Every event is copied, unchanged, into ring 0 (the current ring); ids,
 * the low-water mark and the id sequence stay as they were.  The primary
 * key becomes (id, ring) and the event id's unique constraint (event_id,
 * ring): a partitioned table's keys include its partition key (ids and
 * event ids still come from one sequence and gen_random_uuid).  The view
 * outbox_metrics keeps its privileges; the table's privileges (on the
 * table and on its columns) are granted on the new table, its storage
 * parameters set on each ring and its statistics targets on the new
 * columns; what else a DBA attached to it (a trigger, a publication, a
 * view, a policy, an index, a foreign key to it, extended statistics)
 * refuses the step with 2BP01, listing them, and nothing changes.  The copy holds
 * the outbox exclusively for as long as it takes: 7.5 s for a million
 * events on this project's 2-core test machine.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_inventory UPDATE TO '0.8'" to load this file. \quit

DO $$
BEGIN
	IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'pg_inventory can only be updated at READ COMMITTED'
			USING ERRCODE = 'active_sql_transaction',
				  HINT = 'Run ALTER EXTENSION pg_inventory UPDATE TO ''0.8'' in a transaction of its own at the default isolation level.';
	END IF;
END
$$;

-- inventory.reservation first, which every call locks (ACCESS SHARE)
-- before anything else: the calls in flight end, those that start wait
LOCK TABLE inventory.reservation, inventory.outbox IN ACCESS EXCLUSIVE MODE;

-- What a DBA attached to the table of 0.7 that this step cannot carry to
-- the partitioned table refuses the step, and nothing changes: a trigger, a
-- publication, a view or rule, a row security policy, an index, a foreign
-- key to it, extended statistics, a column or constraint of its own, a
-- changed default, column options, TOAST parameters, a replica identity,
-- another owner, a sequence owned by a column, a publication that would
-- publish the rings under their names, anything else that depends on the
-- table or its row type.  (Storage parameters and statistics targets are
-- carried, below; table and column privileges too, granted by the
-- extension's owner.)
DO $$
DECLARE
	attached text;
BEGIN
	SELECT pg_catalog.string_agg(a.what, '; ' ORDER BY a.what) INTO attached
	  FROM (SELECT pg_catalog.format('trigger %I', t.tgname) AS what
			  FROM pg_catalog.pg_trigger t
			 WHERE t.tgrelid = 'inventory.outbox'::regclass AND NOT t.tgisinternal
			UNION ALL
			SELECT pg_catalog.format('publication %I', p.pubname)
			  FROM pg_catalog.pg_publication_rel r
			  JOIN pg_catalog.pg_publication p ON p.oid = r.prpubid
			 WHERE r.prrelid = 'inventory.outbox'::regclass
			UNION ALL
			SELECT DISTINCT pg_catalog.format('view or rule of %s', w.ev_class::regclass)
			  FROM pg_catalog.pg_depend d
			  JOIN pg_catalog.pg_rewrite w ON d.classid = 'pg_catalog.pg_rewrite'::regclass
			   AND d.objid = w.oid
			 WHERE d.refclassid = 'pg_catalog.pg_class'::regclass
			   AND d.refobjid = 'inventory.outbox'::regclass
			   AND w.ev_class NOT IN ('inventory.outbox'::regclass,
									  'inventory.outbox_metrics'::regclass)
			UNION ALL
			SELECT pg_catalog.format('policy %I', y.polname)
			  FROM pg_catalog.pg_policy y WHERE y.polrelid = 'inventory.outbox'::regclass
			UNION ALL
			SELECT 'row level security' FROM pg_catalog.pg_class c
			 WHERE c.oid = 'inventory.outbox'::regclass AND c.relrowsecurity
			UNION ALL
			SELECT pg_catalog.format('index %s', i.indexrelid::regclass)
			  FROM pg_catalog.pg_index i
			 WHERE i.indrelid = 'inventory.outbox'::regclass
			   AND i.indexrelid NOT IN ('inventory.outbox_pkey'::regclass,
				   'inventory.outbox_event_id_unique'::regclass,
				   'inventory.outbox_unpublished'::regclass,
				   'inventory.outbox_reservation'::regclass,
				   'inventory.outbox_dead'::regclass,
				   'inventory.outbox_published_at'::regclass)
			UNION ALL
			SELECT pg_catalog.format('foreign key %I of %s', f.conname, f.conrelid::regclass)
			  FROM pg_catalog.pg_constraint f
			 WHERE f.confrelid = 'inventory.outbox'::regclass
			UNION ALL
			SELECT pg_catalog.format('statistics %I', x.stxname)
			  FROM pg_catalog.pg_statistic_ext x
			 WHERE x.stxrelid = 'inventory.outbox'::regclass
			UNION ALL
			-- a column of its own, and its values
			SELECT pg_catalog.format('column %I', t.attname)
			  FROM pg_catalog.pg_attribute t
			 WHERE t.attrelid = 'inventory.outbox'::regclass AND t.attnum > 0
			   AND NOT t.attisdropped
			   AND t.attname NOT IN ('id', 'event_id', 'event_type', 'tenant',
				   'reservation_id', 'payload', 'created_at', 'attempts',
				   'next_attempt_at', 'published_at', 'last_error', 'dead_at',
				   'claimed_until', 'claimed_by')
			UNION ALL
			SELECT pg_catalog.format('constraint %I', k.conname)
			  FROM pg_catalog.pg_constraint k
			 WHERE k.conrelid = 'inventory.outbox'::regclass
			   AND k.conname NOT IN ('outbox_pkey', 'outbox_event_id_unique',
				   'outbox_event_type_valid', 'outbox_attempts_nonneg',
				   'outbox_reservation_fk', 'outbox_dead_unpublished',
				   'outbox_claimed_by_length')
			UNION ALL
			SELECT pg_catalog.format('default of column %I', t.attname)
			  FROM pg_catalog.pg_attrdef f
			  JOIN pg_catalog.pg_attribute t ON t.attrelid = f.adrelid AND t.attnum = f.adnum
			 WHERE f.adrelid = 'inventory.outbox'::regclass
			   -- (printed without the schema, which is on the script's path)
			   AND (t.attname::text, pg_catalog.replace(pg_catalog.pg_get_expr(f.adbin, f.adrelid),
					'inventory.', '')) NOT IN
				   (('id', '_next_event_id(''outbox_id_seq''::regclass)'), ('attempts', '0'))
			UNION ALL
			SELECT pg_catalog.format('n_distinct, storage or compression of column %I', t.attname)
			  FROM pg_catalog.pg_attribute t
			  JOIN pg_catalog.pg_type y ON y.oid = t.atttypid
			 WHERE t.attrelid = 'inventory.outbox'::regclass AND t.attnum > 0
			   AND NOT t.attisdropped
			   AND (EXISTS (SELECT 1 FROM pg_catalog.unnest(t.attoptions) o
							 WHERE o LIKE 'n\_distinct%')
					OR t.attcompression <> '' OR t.attstorage <> y.typstorage)
			UNION ALL
			SELECT 'storage parameters of its TOAST table'
			  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_class x ON x.oid = c.reltoastrelid
			 WHERE c.oid = 'inventory.outbox'::regclass AND x.reloptions IS NOT NULL
			UNION ALL
			SELECT 'replica identity' FROM pg_catalog.pg_class c
			 WHERE c.oid = 'inventory.outbox'::regclass AND c.relreplident <> 'd'
			UNION ALL
			SELECT pg_catalog.format('owner %I (the extension''s is %I)',
					pg_catalog.pg_get_userbyid(c.relowner), pg_catalog.pg_get_userbyid(e.extowner))
			  FROM pg_catalog.pg_class c, pg_catalog.pg_extension e
			 WHERE c.oid = 'inventory.outbox'::regclass AND e.extname = 'pg_inventory'
			   AND c.relowner <> e.extowner
			UNION ALL
			SELECT pg_catalog.format('sequence %s owned by one of its columns', d.objid::regclass)
			  FROM pg_catalog.pg_depend d
			 WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.deptype = 'a'
			   AND d.refclassid = 'pg_catalog.pg_class'::regclass
			   AND d.refobjid = 'inventory.outbox'::regclass AND d.refobjsubid > 0
			   AND d.objid <> 'inventory.outbox_id_seq'::regclass
			   AND (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = d.objid) = 'S'
			UNION ALL
			-- a publication of every table, or of the schema, would publish
			-- the rings under their own names
			SELECT pg_catalog.format('publication %I (of every table or of schema inventory, without publish_via_partition_root)', p.pubname)
			  FROM pg_catalog.pg_publication p
			 WHERE NOT p.pubviaroot
			   AND (p.puballtables OR EXISTS (SELECT 1 FROM pg_catalog.pg_publication_namespace n
											  WHERE n.pnpubid = p.oid
												AND n.pnnspid = 'inventory'::regnamespace))
			UNION ALL
			-- anything else that depends on the table or its row type: a
			-- function, a column of its type, a table inheriting from it
			SELECT DISTINCT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid)
			  FROM pg_catalog.pg_depend d
			 WHERE d.deptype = 'n'
			   AND ((d.refclassid = 'pg_catalog.pg_class'::regclass
					 AND d.refobjid = 'inventory.outbox'::regclass)
				 OR (d.refclassid = 'pg_catalog.pg_type'::regclass
					 AND d.refobjid = (SELECT c.reltype FROM pg_catalog.pg_class c
										WHERE c.oid = 'inventory.outbox'::regclass)))
			   -- (views: above; its own constraints and defaults: above)
			   AND d.classid NOT IN ('pg_catalog.pg_rewrite'::regclass,
					'pg_catalog.pg_constraint'::regclass, 'pg_catalog.pg_attrdef'::regclass)) a;
	IF attached IS NOT NULL THEN
		RAISE EXCEPTION 'inventory.outbox has objects attached that the update to 0.8 cannot carry: %', attached
			USING ERRCODE = 'dependent_objects_still_exist',
				  DETAIL = '0.8 replaces the outbox by a table partitioned into three rings (outbox_ring_0..2); the update would drop these with the table of 0.7.',
				  HINT = 'Save their definitions, drop them, run the update, and create them again on inventory.outbox (a trigger, an index or a policy on it applies to every ring; a publication needs publish_via_partition_root = true to publish the rings as inventory.outbox).';
	END IF;
END
$$;

-- the table of 0.7 steps aside with its indexes (their names are the
-- schema's) and gives up the id sequence
ALTER TABLE inventory.outbox RENAME TO outbox_0_7;
ALTER INDEX inventory.outbox_pkey RENAME TO outbox_0_7_pkey;
ALTER INDEX inventory.outbox_event_id_unique RENAME TO outbox_0_7_event_id_unique;
ALTER INDEX inventory.outbox_unpublished RENAME TO outbox_0_7_unpublished;
ALTER INDEX inventory.outbox_reservation RENAME TO outbox_0_7_reservation;
ALTER INDEX inventory.outbox_dead RENAME TO outbox_0_7_dead;
ALTER INDEX inventory.outbox_published_at RENAME TO outbox_0_7_published_at;
ALTER SEQUENCE inventory.outbox_id_seq OWNED BY NONE;

/* ---------------------------------------------------------------------
 * The outbox's rings (0.8; README "Outbox retention: rings").  The outbox
 * is partitioned by ring (0, 1, 2): new events go to the current ring
 * (sequence inventory.outbox_ring); purge_published removes the published
 * events of another ring by truncating its partition once all of them are
 * older than the retention, after moving its unpublished events and dead
 * letters into the current ring, and makes the next ring current once it
 * is empty.  Published events thus leave whole, never by DELETE: no dead
 * rows, whatever transaction is held open elsewhere (PgQ's rotating
 * tables).
 * ------------------------------------------------------------------- */
CREATE SEQUENCE inventory.outbox_ring AS smallint MINVALUE 0 MAXVALUE 2 START 0 NO CYCLE;
COMMENT ON SEQUENCE inventory.outbox_ring IS
	'The outbox''s current ring (its last_value, 0 to 2): the partition new events go to (outbox.ring''s default). Moved on by purge_published only; never set it by hand. Not dumped by pg_dump: a restored database starts at ring 0 (any ring is safe to write to).';

CREATE FUNCTION inventory._outbox_ring(sequence regclass)
	RETURNS smallint
	LANGUAGE C VOLATILE STRICT
	AS 'MODULE_PATHNAME', 'inventory_outbox_ring';
COMMENT ON FUNCTION inventory._outbox_ring(regclass) IS
	'Default of outbox.ring (0.8), called with inventory.outbox_ring: the current ring, read once per transaction (every event of a transaction goes to the ring current at its first event). Any ring is safe to write to: purge_published truncates a ring only while it holds it exclusively, so never under a writer that has not committed, and moves its unpublished events first. Internal: runs as the extension''s owner inside the write functions. Errors: 42501 without SELECT or USAGE on the sequence.';
CREATE TABLE inventory.outbox (
	id			bigint NOT NULL
		DEFAULT inventory._next_event_id('inventory.outbox_id_seq'::regclass),
	event_id	uuid NOT NULL,
	event_type	text NOT NULL,
	tenant		inventory.name_id NOT NULL,
	reservation_id bigint,
	payload		jsonb NOT NULL,
	created_at	timestamptz NOT NULL,
	attempts	integer NOT NULL DEFAULT 0,
	next_attempt_at timestamptz,
	published_at timestamptz,
	last_error	text,
	dead_at		timestamptz,
	claimed_until timestamptz,
	claimed_by	text,
	ring		smallint NOT NULL
		DEFAULT inventory._outbox_ring('inventory.outbox_ring'::regclass),
	CONSTRAINT outbox_pkey PRIMARY KEY (id, ring),
	CONSTRAINT outbox_event_id_unique UNIQUE (event_id, ring),
	CONSTRAINT outbox_event_type_valid
		CHECK (inventory.is_event_type(event_type)),
	CONSTRAINT outbox_attempts_nonneg CHECK (attempts >= 0),
	CONSTRAINT outbox_dead_unpublished
		CHECK (dead_at IS NULL OR published_at IS NULL),
	CONSTRAINT outbox_claimed_by_length CHECK (char_length(claimed_by) <= 64)
) PARTITION BY LIST (ring);
ALTER SEQUENCE inventory.outbox_id_seq OWNED BY inventory.outbox.id;
-- the relay's work queue: only unpublished, live events
CREATE INDEX outbox_unpublished ON inventory.outbox (id)
	WHERE published_at IS NULL AND dead_at IS NULL;
CREATE INDEX outbox_reservation ON inventory.outbox (reservation_id, id)
	WHERE reservation_id IS NOT NULL;
COMMENT ON TABLE inventory.outbox IS
	'Transactional outbox: one event per change of stock or state, committed with the change and published at least once by a relay. 0.8: partitioned by ring into outbox_ring_0, outbox_ring_1 and outbox_ring_2, so that purge_published removes published events a ring at a time (TRUNCATE), never row by row.';
COMMENT ON COLUMN inventory.outbox.id IS 'Commit-order-compatible sequence within one reservation; drawn by inventory._next_event_id(regclass) (0.7), which holds the writing transaction''s marker for the low-water mark.';
COMMENT ON COLUMN inventory.outbox.event_id IS 'Unique event id; consumers deduplicate on it (AMQP message_id).';
COMMENT ON COLUMN inventory.outbox.event_type IS 'reservation.reserved|confirmed|cancelled|expired|compensated|extended|amended, stock.restocked|adjusted|out_of_stock|back_in_stock|low (AMQP routing key).';
COMMENT ON COLUMN inventory.outbox.tenant IS 'Tenant the event belongs to.';
COMMENT ON COLUMN inventory.outbox.reservation_id IS 'Reservation the event belongs to (NULL for stock events); events of one reservation are published in order.';
COMMENT ON COLUMN inventory.outbox.payload IS 'The event as JSON; can be acted on alone.';
COMMENT ON COLUMN inventory.outbox.created_at IS 'When the change happened (pg_inventory clock).';
COMMENT ON COLUMN inventory.outbox.attempts IS 'Publish attempts that failed so far.';
COMMENT ON COLUMN inventory.outbox.next_attempt_at IS 'Earliest time of the next publish attempt after a failure (NULL: now).';
COMMENT ON COLUMN inventory.outbox.published_at IS 'When the broker confirmed the event; NULL while unpublished.';
COMMENT ON COLUMN inventory.outbox.last_error IS 'Error of the last failed publish attempt.';
COMMENT ON COLUMN inventory.outbox.dead_at IS 'When the event was dead-lettered after too many attempts; NULL while live.';
COMMENT ON COLUMN inventory.outbox.claimed_until IS
	'End of the lease of the relay that claimed the event; NULL or past: free to claim.';
COMMENT ON COLUMN inventory.outbox.claimed_by IS
	'Name of the relay that last claimed the event.';
COMMENT ON INDEX inventory.outbox_unpublished IS 'Unpublished live events in id order, for relays.';
COMMENT ON INDEX inventory.outbox_reservation IS 'Events of one reservation in order, for per-reservation ordering.';

-- dead letters, for operators and the metrics view
CREATE INDEX outbox_dead ON inventory.outbox (id) WHERE dead_at IS NOT NULL;
COMMENT ON INDEX inventory.outbox_dead IS 'Dead-lettered events, for operators.';
-- retention deletes by publication time
CREATE INDEX outbox_published_at ON inventory.outbox (published_at)
	WHERE published_at IS NOT NULL;
COMMENT ON INDEX inventory.outbox_published_at IS 'Published events by time, for purge_published.';
COMMENT ON COLUMN inventory.outbox.ring IS 'The partition (ring 0, 1 or 2) that holds the event (0.8): the ring current when its transaction wrote its first event, or the current ring of the purge_published that moved it there. Set by its default; part of the primary key (id, ring), since a partitioned table''s keys include the partition key; the id alone is unique as before.';

CREATE TABLE inventory.outbox_ring_0 PARTITION OF inventory.outbox FOR VALUES IN (0);
CREATE TABLE inventory.outbox_ring_1 PARTITION OF inventory.outbox FOR VALUES IN (1);
CREATE TABLE inventory.outbox_ring_2 PARTITION OF inventory.outbox FOR VALUES IN (2);
COMMENT ON TABLE inventory.outbox_ring_0 IS 'Ring 0 of inventory.outbox (0.8): a partition, read and written through the outbox; purge_published truncates it when every event it holds is published more than the retention ago.';
COMMENT ON TABLE inventory.outbox_ring_1 IS 'Ring 1 of inventory.outbox (0.8): a partition, read and written through the outbox; purge_published truncates it when every event it holds is published more than the retention ago.';
COMMENT ON TABLE inventory.outbox_ring_2 IS 'Ring 2 of inventory.outbox (0.8): a partition, read and written through the outbox; purge_published truncates it when every event it holds is published more than the retention ago.';


-- every event, unchanged, into ring 0; the foreign key is checked once,
-- after the copy, instead of once per row
INSERT INTO inventory.outbox (id, event_id, event_type, tenant, reservation_id,
	payload, created_at, attempts, next_attempt_at, published_at, last_error,
	dead_at, claimed_until, claimed_by, ring)
SELECT o.id, o.event_id, o.event_type, o.tenant, o.reservation_id, o.payload,
	o.created_at, o.attempts, o.next_attempt_at, o.published_at, o.last_error,
	o.dead_at, o.claimed_until, o.claimed_by, 0
FROM inventory.outbox_0_7 o ORDER BY o.id;
ALTER TABLE inventory.outbox ADD CONSTRAINT outbox_reservation_fk
	FOREIGN KEY (reservation_id) REFERENCES inventory.reservation (id);

-- the view now reads the new table (the same definition; it keeps its
-- privileges and comments)
CREATE OR REPLACE VIEW inventory.outbox_metrics AS
SELECT
	(SELECT count(*) FROM inventory.outbox o
	  WHERE o.published_at IS NULL AND o.dead_at IS NULL) AS unpublished,
	(SELECT count(*) FROM inventory.outbox o
	  WHERE o.published_at IS NULL AND o.dead_at IS NULL
		AND o.attempts > 0) AS retrying,
	(SELECT count(*) FROM inventory.outbox o
	  WHERE o.dead_at IS NOT NULL) AS dead_lettered,
	(SELECT count(*) FROM inventory.outbox o
	  WHERE o.published_at >= pg_catalog.now() - interval '1 minute') AS published_last_minute,
	(SELECT o.created_at FROM inventory.outbox o
	  WHERE o.published_at IS NULL AND o.dead_at IS NULL
		AND o.id >= (SELECT w.last_value FROM inventory.outbox_low_water w)
	  ORDER BY o.id LIMIT 1) AS oldest_unpublished_at,
	COALESCE(EXTRACT(epoch FROM pg_catalog.now() - (SELECT o.created_at
	  FROM inventory.outbox o WHERE o.published_at IS NULL AND o.dead_at IS NULL
		AND o.id >= (SELECT w.last_value FROM inventory.outbox_low_water w)
	  ORDER BY o.id LIMIT 1)), 0)::double precision AS lag_seconds,
	(SELECT count(*) FROM inventory.outbox o
	  WHERE o.published_at IS NULL AND o.dead_at IS NULL
		AND o.id < (SELECT w.last_value FROM inventory.outbox_low_water w)
		AND (o.reservation_id IS NULL OR NOT EXISTS (SELECT 1 FROM inventory.outbox p
			  WHERE p.reservation_id = o.reservation_id
				AND (p.reservation_id, p.id) < (o.reservation_id, o.id)
				AND p.dead_at IS NOT NULL))) AS below_low_water,
	(SELECT min(o.published_at) FROM inventory.outbox o
	  WHERE o.published_at IS NOT NULL) AS oldest_published_at;
COMMENT ON VIEW inventory.outbox_metrics IS
	'Relay health: live unpublished events, those retrying, dead letters, events published in the last minute, and the age of the oldest unpublished event (lag_seconds), looked for from the low-water mark on (0.7), the live events below the mark a relay could publish but does not see (below_low_water, 0.7), and when the oldest published event still kept was published (oldest_published_at, 0.8).';
COMMENT ON COLUMN inventory.outbox_metrics.oldest_published_at IS 'When the oldest published event still in the outbox was published (0.8; NULL when none): purge_published keeps published events between the retention and about twice that, so now() minus it above twice pg_inventory.outbox_retention plus a few worker passes means a ring could not be truncated (a transaction holds it: see pg_locks on inventory.outbox_ring_0..2).';

/* ---------------------------------------------------------------------
 * Privileges: the new table gets every privilege the table of 0.7 had
 * (on the table and on its columns); the partitions and the ring sequence
 * none (read the events through inventory.outbox).  The carried grants are
 * the DBA's, not the extension's initial privileges, so that pg_dump
 * writes them.
 * ------------------------------------------------------------------- */
REVOKE ALL ON inventory.outbox, inventory.outbox_ring_0, inventory.outbox_ring_1,
	inventory.outbox_ring_2 FROM PUBLIC;
REVOKE ALL ON SEQUENCE inventory.outbox_ring FROM PUBLIC;
REVOKE ALL ON FUNCTION inventory._outbox_ring(regclass) FROM PUBLIC;
DO $$
DECLARE
	a record;
	init aclitem[];
BEGIN
	SELECT p.initprivs INTO init FROM pg_catalog.pg_init_privs p
	 WHERE p.objoid = 'inventory.outbox'::regclass
	   AND p.classoid = 'pg_catalog.pg_class'::regclass AND p.objsubid = 0;
	FOR a IN SELECT x.grantee, x.privilege_type, x.is_grantable
			   FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) x
			  WHERE c.oid = 'inventory.outbox_0_7'::regclass AND x.grantee <> c.relowner
	LOOP
		EXECUTE pg_catalog.format('GRANT %s ON inventory.outbox TO %s%s', a.privilege_type,
			CASE a.grantee WHEN 0 THEN 'PUBLIC'
				 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END,
			CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
	END LOOP;
	FOR a IN SELECT c.attname, x.grantee, x.privilege_type, x.is_grantable
			   FROM pg_catalog.pg_attribute c, pg_catalog.aclexplode(c.attacl) x
			  WHERE c.attrelid = 'inventory.outbox_0_7'::regclass AND c.attnum > 0
				AND NOT c.attisdropped
	LOOP
		EXECUTE pg_catalog.format('GRANT %s (%I) ON inventory.outbox TO %s%s',
			a.privilege_type, a.attname,
			CASE a.grantee WHEN 0 THEN 'PUBLIC'
				 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END,
			CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
	END LOOP;
	DELETE FROM pg_catalog.pg_init_privs
	 WHERE objoid = 'inventory.outbox'::regclass
	   AND classoid = 'pg_catalog.pg_class'::regclass AND objsubid > 0;
	IF init IS NULL THEN
		DELETE FROM pg_catalog.pg_init_privs
		 WHERE objoid = 'inventory.outbox'::regclass
		   AND classoid = 'pg_catalog.pg_class'::regclass AND objsubid = 0;
	ELSE
		UPDATE pg_catalog.pg_init_privs SET initprivs = init
		 WHERE objoid = 'inventory.outbox'::regclass
		   AND classoid = 'pg_catalog.pg_class'::regclass AND objsubid = 0;
	END IF;
END
$$;

-- storage parameters (fillfactor, autovacuum) go to each ring, and
-- statistics targets to the table's columns (and so to every ring)
DO $$
DECLARE
	a record;
	opts text;
BEGIN
	SELECT pg_catalog.array_to_string(c.reloptions, ', ') INTO opts
	  FROM pg_catalog.pg_class c WHERE c.oid = 'inventory.outbox_0_7'::regclass;
	IF opts IS NOT NULL THEN
		FOR a IN SELECT r FROM pg_catalog.unnest(ARRAY['inventory.outbox_ring_0',
				'inventory.outbox_ring_1', 'inventory.outbox_ring_2']) AS r LOOP
			EXECUTE pg_catalog.format('ALTER TABLE %s SET (%s)', a.r, opts);
		END LOOP;
	END IF;
	FOR a IN SELECT t.attname, t.attstattarget FROM pg_catalog.pg_attribute t
			  WHERE t.attrelid = 'inventory.outbox_0_7'::regclass AND t.attnum > 0
				AND NOT t.attisdropped AND t.attstattarget >= 0 LOOP
		EXECUTE pg_catalog.format('ALTER TABLE inventory.outbox ALTER COLUMN %I SET STATISTICS %s',
			a.attname, a.attstattarget);
	END LOOP;
END
$$;

ALTER EXTENSION pg_inventory DROP TABLE inventory.outbox_0_7;
DROP TABLE inventory.outbox_0_7;

-- pg_dump keeps the events (each partition's rows); not the ring, which
-- starts at 0 after a restore (any ring is safe to write to)
SELECT pg_catalog.pg_extension_config_dump('inventory.outbox_ring_0', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.outbox_ring_1', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.outbox_ring_2', '');

-- what purge_published does now
COMMENT ON FUNCTION inventory.purge_published(interval, integer) IS
	'Retention: removes the events published more than older_than ago, never dead letters or unpublished events. 0.8: a ring at a time (partitions outbox_ring_0 to outbox_ring_2): a ring other than the current one none of whose events was published within older_than is truncated, after its unpublished events and dead letters move into the current ring; the next ring becomes current once it is empty and the current ring holds an event published more than older_than / 2 ago. Published events thus stay between older_than and about twice that, and leave without leaving dead rows, whatever transaction is open elsewhere. A ring another transaction holds (a writer that has not committed, a reader of the outbox) is left for the next call: it never waits; while another purge_published holds the ring-purge lock (advisory, objsubid 20555, until its transaction ends) it does nothing. max_rows (1 to 1000000), since 0.8: the most live unpublished events a ring may hold to be emptied (they are moved row by row while the ring is locked; a ring with more, behind a slow relay, waits until they are published; dead letters move whatever their number). The worker runs it with pg_inventory.outbox_retention. Returns how many published events it removed. Errors: 22023; 25001 when called in a REPEATABLE READ or SERIALIZABLE transaction.';
