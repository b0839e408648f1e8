#!/usr/bin/env bash
# test/scripts/pg_env.sh: start and stop a throwaway PostgreSQL 15 server on
# loopback, as the postgres user (initdb refuses root), with its socket and
# data in a temporary folder.  Source it, then call pg_start / pg_stop.
#
#   PGI_PORT  port to use (default: a free one from 55432 up)
#   PGI_DIR   folder for data, socket and log (default: a new mktemp -d)
#   PGI_CONF  extra lines for postgresql.conf (optional)
# After pg_start: PGHOST, PGPORT, PGUSER=postgres, PGDATABASE=postgres are
# exported for psql, pg_regress, pg_prove, pgbench and libpq programs.

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

pg_free_port() {
	local p=${1:-55432}
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
	echo "$p"
}

pg_start() {
	PGI_DIR=${PGI_DIR:-$(mktemp -d /tmp/pg_inventory.XXXXXX)}
	PGI_PORT=${PGI_PORT:-$(pg_free_port 55432)}
	mkdir -p "$PGI_DIR"
	chown postgres:postgres "$PGI_DIR"
	chmod 755 "$PGI_DIR"
	if [ ! -f "$PGI_DIR/data/PG_VERSION" ]; then
		runuser -u postgres -- "$PG_BIN/initdb" -D "$PGI_DIR/data" -U postgres \
			-A trust -E UTF8 --locale=C.UTF-8 --no-sync >"$PGI_DIR/initdb.log" 2>&1 ||
			{ cat "$PGI_DIR/initdb.log"; return 1; }
		{
			echo "listen_addresses = '127.0.0.1'"
			echo "port = $PGI_PORT"
			echo "unix_socket_directories = '$PGI_DIR'"
			echo "jit = off"
			echo "fsync = on"
			echo "max_connections = 200"
			echo "shared_buffers = 256MB"
			echo "max_locks_per_transaction = 256"
			echo "log_min_messages = warning"
			echo "log_line_prefix = '%m [%p] %a '"
			[ -n "${PGI_CONF:-}" ] && printf '%s\n' "$PGI_CONF"
		} >>"$PGI_DIR/data/postgresql.conf"
	fi
	runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGI_DIR/data" -l "$PGI_DIR/server.log" \
		-w -t 60 start >/dev/null || { tail -n 30 "$PGI_DIR/server.log"; return 1; }
	export PGHOST="$PGI_DIR" PGPORT="$PGI_PORT" PGUSER=postgres PGDATABASE=postgres
	export PGI_DIR PGI_PORT
}

# pg_stop [mode]: fast (default) or immediate (a crash: WAL recovery on the next start)
pg_stop() {
	[ -n "${PGI_DIR:-}" ] && [ -f "$PGI_DIR/data/postmaster.pid" ] || return 0
	runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGI_DIR/data" -w -t 60 \
		-m "${1:-fast}" stop >/dev/null 2>&1 || true
}

# pg_destroy: stop and remove everything pg_start made
pg_destroy() {
	pg_stop fast
	[ -n "${PGI_DIR:-}" ] && rm -rf "$PGI_DIR"
}
