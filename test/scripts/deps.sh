#!/usr/bin/env bash
# test/scripts/deps.sh (`make deps`): install the Debian 12 packages that
# building, testing and demonstrating pg_inventory need.
#
# Idempotent: it asks dpkg which packages are missing and only then runs
# `apt-get update` and `apt-get install`; when everything is present it does
# nothing and needs no network.  Runs as root (or through sudo when
# available).  Package scripts must not start services (the tests and the
# demo start their own throwaway servers): while installing, a policy-rc.d
# that refuses every service start is put in place unless one exists.
set -euo pipefail

PACKAGES=(
	make build-essential cmake pkg-config
	postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap postgresql-15-cron
	postgresql-15-plproxy # pg_inventory_router (several nodes)
	libtap-parser-sourcehandler-pgtap-perl # pg_prove (a Recommends of pgtap)
	libpqxx-dev libgtest-dev libgmock-dev librabbitmq-dev libssl-dev
	prometheus-cpp-dev # the programs' /metrics and /healthz (pulls civetweb)
	rabbitmq-server amqp-tools gnuplot-nox
	openssl # the TLS tests make a throwaway CA
	curl # make demo scrapes /metrics
	prometheus-postgres-exporter # Deploy.ExporterScrape runs deploy/postgres_exporter/queries.yaml in it
)

installed() {
	# "install ok installed": dpkg -s also succeeds for removed packages
	# whose configuration files are still there
	dpkg -s "$1" 2>/dev/null | grep -qx 'Status: install ok installed'
}

missing=()
for p in "${PACKAGES[@]}"; do
	installed "$p" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#PACKAGES[@]} packages are installed"
	exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "deps: run as root to install: ${missing[*]}" >&2; exit 1; }
	SUDO=sudo
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive

policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# deps.sh: do not start services while installing\nexit 101\n' |
		$SUDO tee "$policy" >/dev/null
	$SUDO chmod 755 "$policy"
	trap '$SUDO rm -f "$policy"' EXIT
fi

$SUDO apt-get update -q
$SUDO apt-get install -y -q "${missing[@]}"

still=()
for p in "${missing[@]}"; do
	installed "$p" || still+=("$p")
done
if [ ${#still[@]} -ne 0 ]; then
	echo "deps: still missing after apt-get install: ${still[*]}" >&2
	exit 1
fi
echo "deps: done"
