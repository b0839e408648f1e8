# shellcheck shell=bash
# test/scripts/demo_build.sh: step 1 of both demos (demo.sh, demo_cluster.sh),
# and their cleanup, sourced by them.
#
# PIDS, demo_cleanup: the demo adds the programs it starts to PIDS; trapped
# on EXIT, demo_cleanup kills them, stops the servers it started (whichever
# of rmq_destroy, pg_destroy, cluster_destroy it has sourced) and removes
# WORK.
#
# demo_build LOGDIR: installs the missing packages (deps.sh), builds and
# installs the extensions into the system's PostgreSQL 15 (make install, the
# way they are used) and builds inventory-relay and inventory-fulfiller with
# cmake (build/).  Sets RELAY and FULFILLER to the programs.  The build logs
# go to LOGDIR; on failure their tail is printed and the caller's die runs.
demo_build() {
	local logdir=$1
	bash test/scripts/deps.sh
	if ! { make -s && make -s install; } >"$logdir/build.log" 2>&1; then
		tail -n 60 "$logdir/build.log"
		die "build failed"
	fi
	if ! { cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
		cmake --build build -j "$(nproc)" --target inventory-relay inventory-fulfiller; } \
		>"$logdir/cmake.log" 2>&1; then
		tail -n 60 "$logdir/cmake.log"
		die "cmake build of inventory-relay / inventory-fulfiller failed"
	fi
	RELAY=build/src/relay/inventory-relay
	FULFILLER=build/src/fulfiller/inventory-fulfiller
}

PIDS=()
demo_cleanup() {
	local p f
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for f in rmq_destroy pg_destroy cluster_destroy; do
		if declare -F "$f" >/dev/null; then "$f" 2>/dev/null || true; fi
	done
	rm -rf "$WORK"
}
