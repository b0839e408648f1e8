# shellcheck shell=bash
# test/scripts/demo_build.sh: step 1 of both demos (demo.sh, demo_cluster.sh),
# sourced by them.
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
