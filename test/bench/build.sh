#!/usr/bin/env bash
# test/bench/build.sh: sourced by the benchmarks (run.sh, cpu_profile.sh).
#
# bench_build PREFIX SRC LOG [REF]
#   Copies the extension's sources (the working tree, or commit REF) to SRC
#   and builds them into a private copy of the PostgreSQL 15 installation
#   under PREFIX (PostgreSQL finds its share and lib folders relative to
#   its binaries: PREFIX/usr/lib/postgresql/15/bin), so a benchmark
#   measures exactly that code and never touches the system's installation
#   that other test runs use; two builds of the extension need two copies.
#   The build's output goes to LOG; on failure its tail is printed and the
#   function returns 1.  SYS_BIN: the system's binaries
#   (/usr/lib/postgresql/15/bin).
bench_build() {
	local prefix=$1 src=$2 logf=$3 ref=${4:-}
	local sys_bin=${SYS_BIN:-/usr/lib/postgresql/15/bin}
	mkdir -p "$prefix/usr/lib/postgresql" "$prefix/usr/share/postgresql" "$src"
	if [ -n "$ref" ]; then
		git archive "$ref" Makefile src sql extension | tar -x -C "$src"
	else
		tar -c Makefile src sql extension | tar -x -C "$src"
	fi
	cp -a "$(dirname "$sys_bin")" "$prefix/usr/lib/postgresql/"
	cp -a /usr/share/postgresql/15 "$prefix/usr/share/postgresql/"
	rm -f "$prefix"/usr/share/postgresql/15/extension/pg_inventory* \
		"$prefix"/usr/lib/postgresql/15/lib/pg_inventory.so
	{ make -C "$src" -s PG_CONFIG="$sys_bin/pg_config" &&
		make -C "$src" -s PG_CONFIG="$sys_bin/pg_config" install DESTDIR="$prefix"; } \
		>"$logf" 2>&1 || { tail -n 40 "$logf"; return 1; }
}
