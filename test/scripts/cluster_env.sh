#!/usr/bin/env bash
# test/scripts/cluster_env.sh: a throwaway pg_inventory cluster on loopback:
# N node servers (database "inventory" with pg_inventory) and one router
# server (database "inventory_router" with pg_inventory_router), each a
# PostgreSQL 15 server of its own started by pg_env.sh.  Source it, then:
#
#   cluster_start [N]        start N nodes (default 3) and the router; the
#                            64 partitions placed on node1..nodeN in turn
#   cluster_role NAME PASS [OPTIONS]
#                            a login role NAME with password PASS (and
#                            OPTIONS, e.g. SUPERUSER) on every server, in
#                            the router's passfile
#   cluster_sql SERVER ARGS  psql -X -q -v ON_ERROR_STOP=1 as postgres on
#                            SERVER (node1..nodeN or router), its database
#   cluster_val SERVER ARGS  the same, unaligned and tuples only
#   cluster_stop_node K [mode], cluster_start_node K
#   cluster_destroy          stop everything and remove it
#
# Nodes accept TCP connections with passwords only (scram-sha-256); the
# router reaches them as the role in effect at the call, with the
# passwords of a passfile only its server's OS user can read (the way the
# README sets up a production router).  The superuser postgres connects
# through each server's Unix socket without a password.
#
#   CLUSTER_DIR   folder for everything (default: a new mktemp -d)
#   CLUSTER_CONF  extra postgresql.conf lines for the nodes (optional)
# After cluster_start: CLUSTER_NODES (N), CLUSTER_PORT[node1..], and
# CLUSTER_PORT[router]; CLUSTER_DIR/<server> holds each server.

# shellcheck source=test/scripts/pg_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/pg_env.sh"

declare -gA CLUSTER_PORT
CLUSTER_NODES=0

_cluster_server() { # _cluster_server NAME: start server NAME under CLUSTER_DIR
	local name=$1 port conf=""
	port=$(pg_free_port $((55500 + RANDOM % 2000)))
	# nodes: a partition move prepares a transaction on each of its two
	[ "$name" = router ] || conf="max_prepared_transactions = 8
${CLUSTER_CONF:-}"
	(
		unset PGI_DIR PGI_PORT
		PGI_DIR=$CLUSTER_DIR/$name PGI_PORT=$port PGI_CONF="$conf" pg_start
	) || return 1
	CLUSTER_PORT[$name]=$port
	if [ "$name" != router ]; then
		# TCP with passwords only; the socket stays trust for postgres
		sed -i -E 's/^(host[[:space:]].*)trust$/\1scram-sha-256/' "$CLUSTER_DIR/$name/data/pg_hba.conf"
		runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$CLUSTER_DIR/$name/data" reload >/dev/null
	fi
}

_cluster_db() {
	case $1 in router) echo inventory_router ;; *) echo inventory ;; esac
}

cluster_sql() {
	local server=$1
	shift
	psql -X -q -v ON_ERROR_STOP=1 -h "$CLUSTER_DIR/$server" -p "${CLUSTER_PORT[$server]}" \
		-U postgres -d "$(_cluster_db "$server")" "$@"
}

cluster_val() {
	cluster_sql "$@" -A -t
}

cluster_start() {
	local n=${1:-3} k nodes=""
	CLUSTER_DIR=${CLUSTER_DIR:-$(mktemp -d /tmp/pg_inventory_cluster.XXXXXX)}
	mkdir -p "$CLUSTER_DIR"
	chown postgres:postgres "$CLUSTER_DIR"
	chmod 755 "$CLUSTER_DIR"
	CLUSTER_NODES=$n
	: >"$CLUSTER_DIR/router.pgpass"
	chown postgres:postgres "$CLUSTER_DIR/router.pgpass"
	chmod 600 "$CLUSTER_DIR/router.pgpass"
	for k in $(seq 1 "$n"); do
		_cluster_server "node$k" || return 1
		psql -X -q -h "$CLUSTER_DIR/node$k" -p "${CLUSTER_PORT[node$k]}" -U postgres -d postgres \
			-c 'CREATE DATABASE inventory' || return 1
		cluster_sql "node$k" -c 'CREATE EXTENSION pg_inventory' \
			-c "SELECT inventory.set_node_number($k)" >/dev/null || return 1
	done
	_cluster_server router || return 1
	psql -X -q -h "$CLUSTER_DIR/router" -p "${CLUSTER_PORT[router]}" -U postgres -d postgres \
		-c 'CREATE DATABASE inventory_router' || return 1
	# as README section 10 sets a router up
	cluster_sql router -c 'CREATE EXTENSION pg_inventory_router CASCADE' \
		-c 'ALTER DATABASE inventory_router SET client_min_messages = warning' || return 1
	for k in $(seq 1 "$n"); do
		cluster_sql router -c "SELECT inventory_router.set_node('node$k',
			'host=127.0.0.1 port=${CLUSTER_PORT[node$k]} dbname=inventory connect_timeout=2 passfile=$CLUSTER_DIR/router.pgpass')" >/dev/null || return 1
		nodes="$nodes${nodes:+,}'node$k'"
	done
	cluster_sql router -c "SELECT inventory_router.place_partitions(ARRAY[$nodes])" >/dev/null
}

cluster_role() {
	local name=$1 pass=$2 options=${3:-} k
	for s in router $(for k in $(seq 1 "$CLUSTER_NODES"); do echo "node$k"; done); do
		cluster_sql "$s" -c "CREATE ROLE \"$name\" LOGIN PASSWORD '$pass' $options" || return 1
	done
	# the router's database hides PL/Proxy's notice "dropping stale conn"
	# from every role (README section 10); a superuser, who moves
	# partitions, keeps its NOTICEs
	case $options in *SUPERUSER*)
		cluster_sql router -c "ALTER ROLE \"$name\" IN DATABASE inventory_router SET client_min_messages = notice" || return 1 ;;
	esac
	for k in $(seq 1 "$CLUSTER_NODES"); do
		echo "127.0.0.1:${CLUSTER_PORT[node$k]}:inventory:$name:$pass" >>"$CLUSTER_DIR/router.pgpass"
	done
}

cluster_stop_node() {
	runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$CLUSTER_DIR/node$1/data" -w -t 60 \
		-m "${2:-fast}" stop >/dev/null 2>&1 || true
}

cluster_start_node() {
	runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$CLUSTER_DIR/node$1/data" \
		-l "$CLUSTER_DIR/node$1/server.log" -w -t 60 start >/dev/null
}

cluster_destroy() {
	local d
	[ -n "${CLUSTER_DIR:-}" ] && [ -d "$CLUSTER_DIR" ] || return 0
	for d in "$CLUSTER_DIR"/*/data; do
		[ -f "$d/postmaster.pid" ] &&
			runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$d" -w -t 60 -m fast stop >/dev/null 2>&1
	done
	rm -rf "$CLUSTER_DIR"
}
