# shellcheck shell=bash
# test/scripts/tap.sh: the TAP helpers of the *_test.sh scripts, sourced
# by them:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
#
# They print the Test Anything Protocol that run_tests.sh counts: the plan
# `1..N`, one line `ok N - WHAT` or `not ok N - WHAT` per check, details as
# `#` lines.  $n counts the checks so far, $failed the failed ones.
#
#   plan N                   prints the plan 1..N (tap_done checks it)
#   ok WHAT                  a passed check
#   not_ok WHAT [DETAIL]     a failed check, DETAIL printed as `#` lines
#   check WHAT EXPECTED GOT  ok when GOT is EXPECTED, else not ok with both
#   check WHAT COMMAND       ok when the shell command COMMAND (a string,
#                            run with eval) succeeds, else not ok with what
#                            it printed
#   q DB SQL                 runs the statements of SQL on database DB,
#                            each in its own transaction, and prints the
#                            tuples, unaligned; stops at the first error
#                            and prints its SQLSTATE
#   q OPTION...              psql with OPTIONs (the first starts with -,
#                            e.g. -d DB -c SQL), tuples only, unaligned,
#                            ON_ERROR_STOP
#   tap_done                 one more failure when the plan was not met;
#                            then succeeds only if nothing failed (the
#                            script's last command)
#
# psql is $PG_BIN/psql when PG_BIN is set, else the one on the PATH.

n=0
failed=0
tap_plan=

plan() {
	tap_plan=$1
	echo "1..$1"
}

ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}

not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	[ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/#   /'
	return 0
}

check() {
	if [ $# -ge 3 ]; then
		if [ "$2" == "$3" ]; then
			ok "$1"
		else
			not_ok "$1" "expected: $2
got:      $3"
		fi
		return 0
	fi
	local out
	if out=$(eval "$2" 2>&1); then
		ok "$1"
	else
		not_ok "$1" "$out"
	fi
}

q() {
	local psql=${PG_BIN:+$PG_BIN/}psql
	if [ "${1:0:1}" == "-" ]; then
		"$psql" -X -q -A -t -v ON_ERROR_STOP=1 "$@"
	else
		printf '%s\n' "$2" |
			"$psql" -X -q -A -t -v ON_ERROR_STOP=1 -v VERBOSITY=sqlstate \
				-d "$1" -f - 2>&1 | sed 's/^psql:[^ ]* ERROR: *//'
	fi
}

tap_done() {
	if [ -n "$tap_plan" ] && [ "$n" -ne "$tap_plan" ]; then
		not_ok "planned $tap_plan tests, ran $n"
	fi
	[ "$failed" -eq 0 ]
}
