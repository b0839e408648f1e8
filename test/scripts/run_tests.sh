#!/usr/bin/env bash
# test/scripts/run_tests.sh (`make test`): the whole test suite.
#
# Installs the packages (deps.sh), builds and installs the extension, and
# runs every suite, going on to the next suite when one fails:
#   isolation  pg_isolation_regress over test/specs/*.spec, on a plain server
#              (no shared_preload_libraries: CREATE EXTENSION alone must work)
# then, on a throwaway server with pg_inventory's expiry worker and pg_cron
# preloaded:
#   regress    pg_regress, `make installcheck` over test/sql/*.sql (with the
#              scheduler tests, WITH_SCHEDULERS=1)
#   pgtap      pg_prove over test/pgtap/*.sql, in database pgtap_test
#   scripts    TAP scripts: pg_dump + pg_restore round trip
#   ctest      the GoogleTest programs, if there is a top-level CMakeLists.txt,
#              with a throwaway RabbitMQ (test/scripts/rabbitmq.sh) for the
#              relay and fulfiller tests (INVENTORY_AMQP_URL)
# A failing suite prints its diffs.  The server is removed on exit.  The last
# line of output is always `N passed, N failed`, summed over every test of
# every suite; a suite that breaks before reporting its tests (build error,
# pg_regress cannot start, a pgTAP file dies) counts as one failed test.
# Exits non-zero if anything failed or if no test ran at all.
set -uo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
export PATH="$PG_BIN:$PATH"
LOGDIR=$(mktemp -d /tmp/pg_inventory_test_logs.XXXXXX)

SUITES=()
declare -A PASSED FAILED NOTE
TOTAL_P=0
TOTAL_F=0

record() { # record SUITE PASSED FAILED [NOTE]
	SUITES+=("$1")
	PASSED[$1]=$2
	FAILED[$1]=$3
	NOTE[$1]=${4:-}
	TOTAL_P=$((TOTAL_P + $2))
	TOTAL_F=$((TOTAL_F + $3))
}

header() {
	echo
	echo "=== $* ==="
}

summary() {
	header "summary"
	printf '%-10s %7s %7s  %s\n' suite passed failed note
	local s
	for s in "${SUITES[@]}"; do
		printf '%-10s %7d %7d  %s\n' "$s" "${PASSED[$s]}" "${FAILED[$s]}" "${NOTE[$s]}"
	done
	KEEP_LOGS=$1
	[ "$1" -eq 0 ] || echo "logs: $LOGDIR"
	echo "$TOTAL_P passed, $TOTAL_F failed"
}

finish() {
	local rc=0
	[ "$TOTAL_F" -eq 0 ] && [ "$TOTAL_P" -gt 0 ] || rc=1
	summary "$rc"
	exit "$rc"
}

# Count the results pg_regress / pg_isolation_regress printed in log file $1:
# PostgreSQL 15 prints `test NAME ... ok 12 ms` (or, inside a parallel group,
# `     NAME ... FAILED`); PostgreSQL 16 and later print TAP lines
# `ok 1 - NAME 12 ms` / `not ok 1 - NAME`.  Sets P and F.
count_pg_regress() {
	P=$(grep -cE '^(test +| +)[^ ]+ +\.\.\. +ok\b|^ok [0-9]+ ' "$1")
	F=$(grep -cE '^(test +| +)[^ ]+ +\.\.\. +(FAILED|failed)\b|^not ok [0-9]+ ' "$1")
}

show_diffs() { # show_diffs FILE...
	local f
	for f in "$@"; do
		if [ -s "$f" ]; then
			echo "--- $f ---"
			cat "$f"
		fi
	done
}

# ---------------------------------------------------------------- build
header "packages"
if ! bash test/scripts/deps.sh; then
	record deps 0 1 "deps.sh failed"
	finish
fi

# The extension is installed into a private copy of the PostgreSQL 15
# installation (PostgreSQL finds its lib and share folders relative to its
# binaries), so a test run never changes the system's installation and two
# runs of different trees can go on at once.  PG_BIN then points there.
header "build and install"
PREFIX=$LOGDIR/pg
SYS_BIN=$PG_BIN
mkdir -p "$PREFIX/usr/lib/postgresql" "$PREFIX/usr/share/postgresql"
chmod 755 "$LOGDIR"
if ! make -s PG_CONFIG="$SYS_BIN/pg_config" >"$LOGDIR/build.log" 2>&1 ||
	! cp -a "$(dirname "$SYS_BIN")" "$PREFIX/usr/lib/postgresql/" ||
	! cp -a /usr/share/postgresql/15 "$PREFIX/usr/share/postgresql/" ||
	! make -s PG_CONFIG="$SYS_BIN/pg_config" install DESTDIR="$PREFIX" >>"$LOGDIR/build.log" 2>&1; then
	tail -n 60 "$LOGDIR/build.log"
	record build 0 1 "make or make install failed"
	finish
fi
PG_BIN=$PREFIX/usr/lib/postgresql/15/bin
export PG_BIN PATH="$PG_BIN:$PATH"
echo "built and installed pg_inventory ($(sed -n "s/^default_version *= *'\(.*\)'/\1/p" extension/pg_inventory.control)) into a private copy of PostgreSQL: $PG_BIN"

# ---------------------------------------------------------------- isolation
# shellcheck source=test/scripts/pg_env.sh
source test/scripts/pg_env.sh
# shellcheck source=test/scripts/rabbitmq.sh
source test/scripts/rabbitmq.sh
# on exit: the servers go first (they run from the private copy), then the
# private copy, then the logs unless something failed
KEEP_LOGS=1
cleanup() {
	rmq_destroy
	pg_destroy
	rm -rf "$LOGDIR/pg"
	[ "$KEEP_LOGS" -ne 0 ] || rm -rf "$LOGDIR"
}
trap cleanup EXIT
shopt -s nullglob
REGRESS_FILES=(test/sql/*.sql)
SPEC_FILES=(test/specs/*.spec)
PGTAP_FILES=(test/pgtap/*.sql)
shopt -u nullglob

header "isolation: pg_isolation_regress, ${#SPEC_FILES[@]} specs in test/specs"
if [ ${#SPEC_FILES[@]} -eq 0 ]; then
	record isolation 0 0 "no tests"
else
	unset PGI_DIR PGI_PORT
	# outbox_low_water prepares a transaction
	if ! PGI_CONF="max_prepared_transactions = 4" pg_start; then
		record isolation 0 1 "the plain server did not start"
	else
		# REGRESS= leaves only the isolation half of PGXS's installcheck;
		# ISOLATION_OPTS has --outputdir=., so the diffs land in ./regression.diffs
		rm -f regression.diffs regression.out output_iso/regression.diffs
		make -s installcheck REGRESS= 2>&1 | tee "$LOGDIR/isolation.log"
		rc=${PIPESTATUS[0]}
		count_pg_regress "$LOGDIR/isolation.log"
		if [ "$rc" -ne 0 ]; then
			show_diffs regression.diffs output_iso/regression.diffs
			[ "$F" -eq 0 ] && F=1
		fi
		record isolation "$P" "$F"
		pg_destroy
	fi
	unset PGI_DIR PGI_PORT
fi

# ---------------------------------------------------------------- server
header "server"
PGI_CONF="shared_preload_libraries = 'pg_inventory,pg_cron'
cron.database_name = 'cron_test'
pg_inventory.worker_database = 'worker_test'
pg_inventory.worker_interval = 200
max_prepared_transactions = 4" pg_start || {
	record server 0 1 "the test server did not start"
	finish
}
# The background workers connect to these two databases, never to
# contrib_regression, which pg_regress drops and recreates.
for db in cron_test worker_test; do
	psql -X -q -d postgres -c "CREATE DATABASE $db" || {
		record server 0 1 "CREATE DATABASE $db failed"
		finish
	}
done
echo "PostgreSQL $(psql -X -At -c 'SHOW server_version') on port $PGPORT, socket and data in $PGI_DIR"

# ---------------------------------------------------------------- regress
header "regress: pg_regress, ${#REGRESS_FILES[@]} files in test/sql"
if [ ${#REGRESS_FILES[@]} -eq 0 ]; then
	record regress 0 0 "no tests"
else
	rm -f regression.diffs regression.out
	make -s installcheck ISOLATION= WITH_SCHEDULERS=1 2>&1 | tee "$LOGDIR/regress.log"
	rc=${PIPESTATUS[0]}
	count_pg_regress "$LOGDIR/regress.log"
	if [ "$rc" -ne 0 ]; then
		show_diffs regression.diffs
		if [ "$F" -eq 0 ]; then
			record regress "$P" 1 "pg_regress exited with $rc"
		else
			record regress "$P" "$F"
		fi
	else
		record regress "$P" "$F"
	fi
fi

# ---------------------------------------------------------------- pgTAP
header "pgtap: pg_prove, ${#PGTAP_FILES[@]} files in test/pgtap"
if [ ${#PGTAP_FILES[@]} -eq 0 ]; then
	record pgtap 0 0 "no tests"
elif ! psql -X -q -d postgres -c 'CREATE DATABASE pgtap_test' ||
	! psql -X -q -d pgtap_test -v ON_ERROR_STOP=1 \
		-c 'CREATE EXTENSION pgtap' -c 'CREATE EXTENSION pg_inventory'; then
	record pgtap 0 1 "could not prepare database pgtap_test"
else
	# --verbose prints every TAP line, which is what is counted; the passing
	# `ok N` lines are left out of the screen (they are in the log)
	pg_prove --verbose --failures -d pgtap_test "${PGTAP_FILES[@]}" >"$LOGDIR/pgtap.log" 2>&1
	rc=$?
	grep -vE '^ok [0-9]+' "$LOGDIR/pgtap.log"
	# a `not ok` marked TODO is an expected failure, which TAP counts as passing
	P=$(grep -cE '^ok [0-9]+|^not ok [0-9]+.*# *TODO' "$LOGDIR/pgtap.log")
	F=$(grep -E '^not ok [0-9]+' "$LOGDIR/pgtap.log" | grep -cvE '# *TODO')
	# a file that died or broke its plan without a `not ok` line is listed
	# in the Test Summary Report as `FILE (Wstat: W Tests: T Failed: 0)`
	F=$((F + $(grep -cE '\(Wstat: .* Failed: 0\)$' "$LOGDIR/pgtap.log")))
	if [ "$rc" -ne 0 ] && [ "$F" -eq 0 ]; then
		# a bad plan or a file that died: nothing says `not ok`
		record pgtap "$P" 1 "pg_prove exited with $rc"
	else
		record pgtap "$P" "$F"
	fi
fi

# ---------------------------------------------------------------- scripts
shopt -s nullglob
SCRIPT_FILES=(test/scripts/*_test.sh)
shopt -u nullglob
header "scripts: ${#SCRIPT_FILES[@]} TAP scripts in test/scripts"
SP=0
SF=0
for t in "${SCRIPT_FILES[@]}"; do
	bash "$t" >"$LOGDIR/$(basename "$t").log" 2>&1
	rc=$?
	p=$(grep -cE '^ok [0-9]+' "$LOGDIR/$(basename "$t").log")
	f=$(grep -cE '^not ok [0-9]+' "$LOGDIR/$(basename "$t").log")
	if [ "$rc" -ne 0 ] || [ "$f" -gt 0 ]; then
		grep -vE '^ok [0-9]+' "$LOGDIR/$(basename "$t").log"
		[ "$f" -eq 0 ] && f=1
	fi
	echo "$t: $p passed, $f failed"
	SP=$((SP + p))
	SF=$((SF + f))
done
record scripts "$SP" "$SF"

# ---------------------------------------------------------------- CTest
if [ -f CMakeLists.txt ]; then
	header "ctest: GoogleTest programs (CMakeLists.txt)"
	# C++ tests read PGHOST/PGPORT/PGUSER/PGDATABASE (and PGI_DIR, to stop
	# and restart the server) from the environment, as pg_env.sh exported
	# them; PGDATABASE is a database of their own with the extension
	psql -X -q -d postgres -c 'CREATE DATABASE ctest' &&
		psql -X -q -d ctest -c 'CREATE EXTENSION pg_inventory'
	export PGDATABASE=ctest
	# the relay and fulfiller tests need a broker; without one they skip,
	# so a broker that does not start counts as a failure here
	unset RMQ_DIR RMQ_PORT RMQ_DIST_PORT RMQ_EPMD_PORT RMQ_NODENAME
	if rmq_start >"$LOGDIR/rabbitmq.log" 2>&1; then
		echo "RabbitMQ on $INVENTORY_AMQP_URL, state in $RMQ_DIR"
	else
		tail -n 30 "$LOGDIR/rabbitmq.log"
		record rabbitmq 0 1 "RabbitMQ did not start: the relay tests skip"
	fi
	if ! cmake -S . -B build >"$LOGDIR/cmake.log" 2>&1 ||
		! cmake --build build -j "$(nproc)" >>"$LOGDIR/cmake.log" 2>&1; then
		tail -n 60 "$LOGDIR/cmake.log"
		record ctest 0 1 "cmake configure or build failed"
	else
		ctest --test-dir build --output-on-failure 2>&1 | tee "$LOGDIR/ctest.log"
		rc=${PIPESTATUS[0]}
		# "100% tests passed, 0 tests failed out of 7"
		line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$LOGDIR/ctest.log" | tail -n 1)
		if [ -n "$line" ]; then
			F=$(sed -E 's/.*passed, ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
			T=$(sed -E 's/.*passed, ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$line")
			P=$((T - F))
		else
			P=0 F=0 # "No tests were found!!!"
		fi
		if [ "$rc" -ne 0 ] && [ "$F" -eq 0 ]; then
			record ctest "$P" 1 "ctest exited with $rc"
		else
			record ctest "$P" "$F"
		fi
	fi
else
	header "ctest: no top-level CMakeLists.txt"
	record ctest 0 0 "no CMakeLists.txt"
fi

finish
