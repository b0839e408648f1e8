#!/usr/bin/env bash
# test/scripts/rabbitmq.sh: a throwaway RabbitMQ node on loopback, as root
# without systemd, with all its state (mnesia, logs, cookie, config) in one
# temporary folder.  Source it (like pg_env.sh), then:
#
#   rmq_start      start a node, wait until it runs (5-8 s)
#   rmq_stop_app   stop the RabbitMQ application, node kept (a broker outage)
#   rmq_start_app  start it again and wait for it
#   rmq_stop       stop the node and epmd
#   rmq_destroy    rmq_stop, then remove the folder
#   rmq_ctl ARGS   rabbitmqctl against this node
#   rmq_tls_files DIR  a throwaway CA and certificates for a TLS listener
#                  (openssl): DIR/ca.pem, server.pem + server.key (for DNS
#                  name localhost), client.pem + client.key (CN
#                  pgi-test-client), and other-ca.pem (a CA that signed
#                  nothing here)
#
#   RMQ_PORT       AMQP port (default: a free one from 5673 up); any port up
#                  to 65535: the ports derived from it wrap from 65535 to 1024
#   RMQ_DIST_PORT  Erlang distribution port (default: a free one from
#                  RMQ_PORT + 20000 up)
#   RMQ_EPMD_PORT  the node's own epmd (default: a free one from RMQ_PORT +
#                  30000 up)
#   RMQ_DIR        folder for everything (default: a new mktemp -d)
#   RMQ_TLS_DIR    with the files of rmq_tls_files: also a TLS listener
#                  (listeners.ssl.default, ssl_options.*) on RMQ_TLS_PORT
#                  (default: a free one from RMQ_PORT + 1000 up); a client
#                  certificate, when one is sent, must be signed by the CA
# After rmq_start: INVENTORY_AMQP_URL (amqp://guest:guest@127.0.0.1:PORT, no
# trailing slash: that would mean the empty vhost), RMQ_DIR, RMQ_PORT,
# RMQ_NODENAME, RMQ_TLS_PORT (with RMQ_TLS_DIR) and RMQ_SCRIPT (this file)
# are exported, so that tests can run `bash -c 'source "$RMQ_SCRIPT" &&
# rmq_stop_app'`; they are also written to $RMQ_DIR/node.env, so that
# another shell can `source "$RMQ_DIR/node.env"` and then stop the node.

RMQ_SBIN=${RMQ_SBIN:-/usr/lib/rabbitmq/bin}
RMQ_SCRIPT=$(readlink -f "${BASH_SOURCE[0]}")

# rmq_free_port [FROM [TAKEN...]]: the first port from FROM up (wrapping
# from 65535 to 1024) that nobody listens on and that is not one of TAKEN
rmq_free_port() {
	local p=${1:-5673} tries=0
	shift || true
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || [[ " $* " == *" $p "* ]]; do
		p=$((p >= 65535 ? 1024 : p + 1))
		tries=$((tries + 1))
		if [ "$tries" -gt 64512 ]; then
			echo "rabbitmq.sh: no free port" >&2
			return 1
		fi
	done
	echo "$p"
}

# rmq_port_after BASE OFFSET: BASE + OFFSET, wrapped into 1024..65535, so
# that the ports derived from any AMQP port are valid ports
rmq_port_after() {
	local span=$((65535 - 1024 + 1))
	echo $(((($1 - 1024 + $2) % span + span) % span + 1024))
}

# the environment every rabbitmq-server / rabbitmqctl call of this node needs
_rmq_env() {
	env HOME="$RMQ_DIR" RABBITMQ_NODENAME="$RMQ_NODENAME" \
		RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$RMQ_PORT" \
		RABBITMQ_DIST_PORT="$RMQ_DIST_PORT" ERL_EPMD_ADDRESS=127.0.0.1 \
		ERL_EPMD_PORT="$RMQ_EPMD_PORT" \
		RABBITMQ_MNESIA_BASE="$RMQ_DIR/mnesia" RABBITMQ_LOG_BASE="$RMQ_DIR/log" \
		RABBITMQ_PID_FILE="$RMQ_DIR/rmq.pid" \
		RABBITMQ_ENABLED_PLUGINS_FILE="$RMQ_DIR/enabled_plugins" \
		RABBITMQ_CONFIG_FILE="$RMQ_DIR/rabbitmq" \
		RABBITMQ_ADVANCED_CONFIG_FILE="$RMQ_DIR/advanced.config" \
		RABBITMQ_CONF_ENV_FILE="$RMQ_DIR/rabbitmq-env.conf" \
		PATH="$RMQ_SBIN:$PATH" "$@"
}

rmq_ctl() {
	_rmq_env rabbitmqctl -q -n "$RMQ_NODENAME" "$@"
}

rmq_start() {
	RMQ_DIR=${RMQ_DIR:-$(mktemp -d /tmp/pg_inventory_rmq.XXXXXX)}
	RMQ_PORT=${RMQ_PORT:-$(rmq_free_port 5673)}
	RMQ_DIST_PORT=${RMQ_DIST_PORT:-$(rmq_free_port "$(rmq_port_after "$RMQ_PORT" 20000)" "$RMQ_PORT")}
	# a private epmd per node: stopping it never touches anyone else's
	RMQ_EPMD_PORT=${RMQ_EPMD_PORT:-$(rmq_free_port "$(rmq_port_after "$RMQ_PORT" 30000)" "$RMQ_PORT" "$RMQ_DIST_PORT")}
	RMQ_NODENAME=${RMQ_NODENAME:-pgi$RMQ_PORT@localhost}
	mkdir -p "$RMQ_DIR"
	echo '[].' >"$RMQ_DIR/enabled_plugins"
	: >"$RMQ_DIR/rabbitmq-env.conf"
	printf 'listeners.tcp.default = 127.0.0.1:%s\nloopback_users = none\n' \
		"$RMQ_PORT" >"$RMQ_DIR/rabbitmq.conf"
	if [ -n "${RMQ_TLS_DIR:-}" ]; then
		RMQ_TLS_PORT=${RMQ_TLS_PORT:-$(rmq_free_port "$(rmq_port_after "$RMQ_PORT" 1000)" "$RMQ_PORT" "$RMQ_DIST_PORT" "$RMQ_EPMD_PORT")}
		cat >>"$RMQ_DIR/rabbitmq.conf" <<-EOF
			listeners.ssl.default = 127.0.0.1:$RMQ_TLS_PORT
			ssl_options.cacertfile = $RMQ_TLS_DIR/ca.pem
			ssl_options.certfile = $RMQ_TLS_DIR/server.pem
			ssl_options.keyfile = $RMQ_TLS_DIR/server.key
			ssl_options.verify = verify_peer
			ssl_options.fail_if_no_peer_cert = false
		EOF
		export RMQ_TLS_PORT
	fi
	export RMQ_DIR RMQ_PORT RMQ_DIST_PORT RMQ_EPMD_PORT RMQ_NODENAME RMQ_SCRIPT
	{
		for v in RMQ_DIR RMQ_PORT RMQ_DIST_PORT RMQ_EPMD_PORT RMQ_NODENAME RMQ_TLS_PORT; do
			[ -n "${!v:-}" ] && printf 'export %s=%q\n' "$v" "${!v}"
		done
		printf 'export INVENTORY_AMQP_URL=amqp://guest:guest@127.0.0.1:%s\n' "$RMQ_PORT"
	} >"$RMQ_DIR/node.env"
	_rmq_env rabbitmq-server -detached >"$RMQ_DIR/start.log" 2>&1 || {
		cat "$RMQ_DIR/start.log"
		return 1
	}
	if ! rmq_ctl wait --timeout 60 "$RMQ_DIR/rmq.pid" >>"$RMQ_DIR/start.log" 2>&1; then
		cat "$RMQ_DIR/start.log"
		tail -n 30 "$RMQ_DIR"/log/*.log 2>/dev/null
		return 1
	fi
	export INVENTORY_AMQP_URL="amqp://guest:guest@127.0.0.1:$RMQ_PORT"
}

rmq_stop_app() {
	rmq_ctl stop_app >/dev/null
}

rmq_start_app() {
	rmq_ctl start_app >/dev/null && rmq_ctl await_startup --timeout 60 >/dev/null
}

rmq_stop() {
	[ -n "${RMQ_DIR:-}" ] && [ -f "$RMQ_DIR/rmq.pid" ] || return 0
	rmq_ctl stop "$RMQ_DIR/rmq.pid" >/dev/null 2>&1 || true
	_rmq_env epmd -port "$RMQ_EPMD_PORT" -kill >/dev/null 2>&1 || true
	rm -f "$RMQ_DIR/rmq.pid"
}

rmq_destroy() {
	rmq_stop
	[ -n "${RMQ_DIR:-}" ] && rm -rf "$RMQ_DIR"
	unset INVENTORY_AMQP_URL
}

rmq_tls_files() {
	local dir=$1
	mkdir -p "$dir"
	(
		cd "$dir" || exit 1
		set -e
		# -subj and -addext keep openssl.cnf's prompts away
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=pgi-test-ca \
			-keyout ca.key -out ca.pem
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=pgi-other-ca \
			-keyout other-ca.key -out other-ca.pem
		openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
			-addext subjectAltName=DNS:localhost -keyout server.key -out server.csr
		openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
			-days 2 -copy_extensions copy -out server.pem
		openssl req -newkey rsa:2048 -nodes -subj /CN=pgi-test-client \
			-keyout client.key -out client.csr
		openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
			-days 2 -out client.pem
		chmod 644 ./*.pem ./*.key
	) >"$dir/openssl.log" 2>&1 || { cat "$dir/openssl.log"; return 1; }
}
