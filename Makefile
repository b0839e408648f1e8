# Makefile: PGXS build of the pg_inventory extension, its regress and
# isolation tests, and the two commands of the README (make demo, make test).

PG_CONFIG ?= /usr/lib/postgresql/15/bin/pg_config

# the control file is the only place that states the version
EXTVERSION := $(shell sed -n "s/^default_version *= *'\(.*\)'/\1/p" extension/pg_inventory.control)
ROUTER_VERSION := $(shell sed -n "s/^default_version *= *'\(.*\)'/\1/p" extension/pg_inventory_router.control)

MODULE_big = pg_inventory
OBJS = src/pg_inventory.o src/statement.o src/call.o src/auth.o src/validate.o \
	src/storage_row.o src/storage_slot.o src/allocate.o src/reservation.o src/ledger.o \
	src/invariants.o src/outbox.o src/retention.o src/worker.o src/location.o \
	src/level.o src/console.o src/backend_cache.o
MODULEDIR = extension
# sql/pg_inventory.sql and sql/pg_inventory_router.sql are the full scripts
# of the current versions, installed under their versioned names; the
# first released full scripts and every upgrade step are installed as they
# are
DATA = extension/pg_inventory.control sql/pg_inventory--0.1.sql \
	$(wildcard sql/pg_inventory--*--*.sql) \
	extension/pg_inventory_router.control sql/pg_inventory_router--0.1.sql \
	$(wildcard sql/pg_inventory_router--*--*.sql)
DATA_built = sql/pg_inventory--$(EXTVERSION).sql sql/pg_inventory_router--$(ROUTER_VERSION).sql

# The scheduler tests need a server with pg_inventory and pg_cron preloaded
# and the databases worker_test and cron_test (make test sets that up); a
# plain `make installcheck` leaves them out unless WITH_SCHEDULERS=1.
SCHEDULER_TESTS = 110_worker 120_pg_cron
REGRESS = $(patsubst test/sql/%.sql,%,$(sort $(wildcard test/sql/*.sql)))
ifndef WITH_SCHEDULERS
REGRESS := $(filter-out $(SCHEDULER_TESTS),$(REGRESS))
endif
# pg_regress feeds each file to psql on standard input, so psql's \ir
# (include relative to the current file) resolves against psql's working
# directory: the launcher starts psql in test/sql, where `\ir include/x.sql`
# finds test/sql/include/x.sql, as it does under `psql -f test/sql/FILE.sql`
# from any directory.  Files in test/sql/include/ are not tests.
REGRESS_OPTS = --inputdir=test --load-extension=pg_inventory --launcher='env -C test/sql'
ISOLATION = $(patsubst test/specs/%.spec,%,$(sort $(wildcard test/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test --outputdir=. --load-extension=pg_inventory

PG_CPPFLAGS = -DPG_INVENTORY_VERSION=\"$(EXTVERSION)\"
PG_CFLAGS += -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

sql/pg_inventory--$(EXTVERSION).sql: sql/pg_inventory.sql
	cp $< $@

sql/pg_inventory_router--$(ROUTER_VERSION).sql: sql/pg_inventory_router.sql
	cp $< $@

.PHONY: deps test demo demo-cluster bench bench-cpu bench-cluster
deps:
	@bash test/scripts/deps.sh

# the whole test suite: its own server, every suite, one summary line
test:
	@bash test/scripts/run_tests.sh

# the main job: a realistic reservation workload end to end
demo:
	@bash test/scripts/demo.sh

# the same flow on three nodes behind one router (pg_inventory_router)
demo-cluster:
	@bash test/scripts/demo_cluster.sh

# performance benchmark (not part of make test): writes test/bench/RESULTS.md and throughput.png
bench:
	@bash test/bench/run.sh

# pg_inventory_router: its cost per call, 1, 2 and 3 nodes (also run by
# make bench): writes test/bench/CLUSTER.md
bench-cluster:
	@bash test/bench/cluster.sh

# CPU per reserve call measured in the server, with a profile by phase
# (not part of make test): writes test/bench/CPU_PROFILE.md
bench-cpu:
	@bash test/bench/cpu_profile.sh
