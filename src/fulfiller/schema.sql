-- src/fulfiller/schema.sql: the fulfillment consumer's own schema.
--
-- inventory-fulfiller runs this at start (every statement is idempotent;
-- --skip-schema leaves it to the setup scripts).  The inbox row and the
-- business effect of an event are written in one transaction, so an event
-- delivered again (at-least-once) finds its inbox row and changes nothing.
-- CREATE SCHEMA IF NOT EXISTS checks the CREATE privilege on the database
-- even when the schema exists: the schema is made only where it is missing,
-- so a role that owns it (README section 8: no CREATE on the database) runs
-- this file.
DO $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace
				   WHERE nspname = 'fulfillment') THEN
		CREATE SCHEMA fulfillment;
	END IF;
END
$$;
COMMENT ON SCHEMA fulfillment IS
	'The fulfillment consumer: events it processed, requests to the warehouse, failures.';

-- every event processed once, by event_id (the AMQP message_id)
CREATE TABLE IF NOT EXISTS fulfillment.inbox (
	event_id	uuid PRIMARY KEY,
	event_type	text NOT NULL,
	received_at	timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE fulfillment.inbox IS
	'Deduplication: one row per processed event, written in the transaction of its effect.';

-- the business effect: a request to the warehouse to ship a confirmed reservation
CREATE TABLE IF NOT EXISTS fulfillment.request (
	id			bigserial PRIMARY KEY,
	event_id	uuid NOT NULL CONSTRAINT request_event_once UNIQUE,
	tenant		text NOT NULL,
	request_key	text NOT NULL,
	reservation_id bigint NOT NULL,
	version		integer,
	lines		jsonb NOT NULL,
	created_at	timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE fulfillment.request IS
	'A shipment request for a confirmed reservation (event reservation.confirmed).';

-- the SKUs the warehouse can ship; an event with any other SKU is held (or,
-- with --compensate-unknown-sku, compensated).  The fulfiller refuses to
-- start while it is empty
CREATE TABLE IF NOT EXISTS fulfillment.warehouse_sku (
	tenant		text NOT NULL,
	sku			text NOT NULL,
	PRIMARY KEY (tenant, sku)
);
COMMENT ON TABLE fulfillment.warehouse_sku IS
	'SKUs the warehouse can ship, per tenant.';

-- events held back: a SKU the warehouse cannot ship (yet); the sale stands.
-- The fulfiller turns them into requests once every SKU of the event is in
-- warehouse_sku (at start and every --recheck-held), unless an operator
-- compensates the reservation and deletes the row
CREATE TABLE IF NOT EXISTS fulfillment.held (
	event_id	uuid PRIMARY KEY,
	tenant		text NOT NULL,
	request_key	text NOT NULL,
	reservation_id bigint,
	version		integer,
	lines		jsonb NOT NULL,
	reason		text NOT NULL,
	held_at		timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE fulfillment.held IS
	'Confirmed reservations with a SKU not in warehouse_sku: held, not compensated, until the SKU is added.';

-- permanent failures, with --compensate-unknown-sku: the reservation was
-- compensated
CREATE TABLE IF NOT EXISTS fulfillment.failure (
	event_id	uuid PRIMARY KEY,
	tenant		text NOT NULL,
	request_key	text NOT NULL,
	reservation_id bigint,
	reason		text NOT NULL,
	compensated_status text,
	compensated_state text,
	created_at	timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE fulfillment.failure IS
	'Events the warehouse cannot fulfil, compensated (--compensate-unknown-sku), with the outcome of inventory.compensate.';
