#!/usr/bin/env bash
# services.sh starts, describes and stops the throwaway services that the
# integration suite needs, natively and without Docker:
#
#   - a PostgreSQL 15 cluster (trust auth, loopback only, a free port), and
#   - the versitygw S3 server (posix backend with versioning, an internal IAM
#     directory and its admin port, so tests can create per-principal users),
#   - and, when a MinIO server binary is found (scripts/tools.sh minio builds
#     one; MinIO is AGPL, run here as an unmodified test service only), a
#     second S3 server: MinIO on its own free port;
#   - and, when an Ory Hydra binary is found (scripts/tools.sh hydra builds
#     one; Apache-2.0), an OAuth 2.1 authorization server for the identity
#     tests: its database in the PostgreSQL cluster, public and admin ports
#     on loopback, JWT access tokens; its environment is MCPRES_OAUTH_*.
#
# Usage:
#   scripts/services.sh up      start them (idempotent), wait until they answer,
#                               print the environment as `export VAR=...` lines
#                               (PostgreSQL and versitygw)
#   scripts/services.sh up --standby
#                               the same, plus a streaming hot standby of the
#                               cluster (pg_basebackup -R from the primary, on
#                               its own free port), waited for until it is in
#                               recovery and streaming; its URL is
#                               MCPRES_POSTGRES_STANDBY_URL (MCPRES_STANDBY=1
#                               asks for it too). The primary then loads
#                               pg_stat_statements. Services running without
#                               a standby are restarted with one.
#   scripts/services.sh standby-stop
#                               stop the standby at once (pg_ctl -m immediate:
#                               a crash, as the standby tests need)
#   scripts/services.sh standby-start
#                               start it again and wait until it streams
#   scripts/services.sh env     print the environment of the running services
#   scripts/services.sh env minio
#                               the same, with MinIO as the S3 server: its
#                               MCPRES_S3_* and MCPRES_S3_ADMIN_ENDPOINT=none
#                               (MinIO has no versitygw admin API, so the tests
#                               of per-principal users skip, counted)
#   scripts/services.sh status  say whether the services are running
#   scripts/services.sh down    stop both and remove their state (idempotent)
#
#   eval "$(scripts/services.sh up)"   # or: scripts/services.sh up && eval "$(scripts/services.sh env)"
#
# Messages go to stderr; only the `export` lines go to stdout.
#
# Knobs (environment):
#   MCPRES_SERVICES_DIR  state directory (default: <repo>/.services, gitignored)
#   MCPRES_PG_BIN        PostgreSQL server binaries (default: /usr/lib/postgresql/15/bin)
#   MCPRES_VERSITYGW     versitygw binary (default: versitygw on PATH, then $GOBIN, then $(go env GOPATH)/bin)
#   MCPRES_MINIO         minio binary (default: the same places); MCPRES_MINIO=none starts no MinIO
#   MCPRES_HYDRA         hydra binary (default: the same places); MCPRES_HYDRA=none starts no Hydra
#   MCPRES_TMPDIR        parent of the cluster directory (default: /tmp; the cluster
#                        lives outside the repo because, run as root, it belongs to
#                        the postgres user, who may not be able to enter the checkout)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${MCPRES_SERVICES_DIR:-$ROOT/.services}
PG_BIN=${MCPRES_PG_BIN:-/usr/lib/postgresql/15/bin}
PG_PARENT=${MCPRES_TMPDIR:-/tmp}
ENV_FILE=$STATE/env
REGION=us-east-1

say() { printf 'services: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# ---------------------------------------------------------------- helpers

# port_in_use PORT: true when something listens on or accepts at 127.0.0.1:PORT.
port_in_use() {
	if command -v ss >/dev/null 2>&1 && ss -Htln "sport = :$1" 2>/dev/null | grep -q .; then
		return 0
	fi
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_port [EXCLUDED...]: print a random loopback port that nothing uses.
# Random high ports (not 5432, not a fixed number) so a running Postgres or a
# second checkout never collides; a lost race is retried by the callers.
free_port() {
	local p i x taken
	for i in $(seq 1 200); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		taken=0
		for x in "$@"; do [ "$x" = "$p" ] && taken=1; done
		[ "$taken" = 1 ] && continue
		port_in_use "$p" || {
			echo "$p"
			return 0
		}
	done
	die "no free loopback port found"
}

# http_ok PORT PATH: true when GET http://127.0.0.1:PORT/PATH answers 200.
http_ok() {
	local status
	status=$(
		exec 2>/dev/null
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' "$2" "$1" >&3
		IFS= read -r -t 5 line <&3 || exit 1
		printf '%s' "$line"
	) || return 1
	case $status in "HTTP/1."?" 200"*) return 0 ;; esac
	return 1
}

# as_pg CMD...: run CMD as the postgres user when we are root (initdb refuses root).
as_pg() {
	if [ "$(id -u)" != 0 ]; then
		"$@"
	elif command -v runuser >/dev/null 2>&1; then
		runuser -u postgres -- "$@"
	else
		su -s /bin/sh postgres -c "$(printf '%q ' "$@")"
	fi
}

find_versitygw() {
	local c
	for c in "${MCPRES_VERSITYGW:-}" "$(command -v versitygw 2>/dev/null || true)" \
		"${GOBIN:+$GOBIN/versitygw}" "$(go env GOPATH 2>/dev/null || true)/bin/versitygw"; do
		if [ -n "$c" ] && [ -x "$c" ]; then
			echo "$c"
			return 0
		fi
	done
	die "versitygw not found; install it with: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0 (or set MCPRES_VERSITYGW)"
}

# find_optional NAME VAR: print the path of the optional service binary
# NAME (VAR, then PATH, $GOBIN, $(go env GOPATH)/bin), or nothing; VAR=none
# leaves it out, and a VAR that is no executable is an error.
find_optional() {
	local name=$1 var=$2 c
	local given=${!var:-}
	[ "$given" = none ] && return 0
	for c in "$given" "$(command -v "$name" 2>/dev/null || true)" \
		"${GOBIN:+$GOBIN/$name}" "$(go env GOPATH 2>/dev/null || true)/bin/$name"; do
		if [ -n "$c" ] && [ -x "$c" ]; then
			echo "$c"
			return 0
		fi
	done
	[ -z "$given" ] || die "$var=$given is not an executable"
}

find_minio() { find_optional minio MCPRES_MINIO; }

# service_pid NAME: print the pid of our NAME service (its pid file in
# $STATE, a live process whose command line names it), or fail.
service_pid() {
	local pid
	[ -f "$STATE/$1.pid" ] || return 1
	pid=$(cat "$STATE/$1.pid")
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$1" || return 1
	echo "$pid"
}

minio_pid() { service_pid minio; }

vgw_pid() { # print the pid of our versitygw when it is alive
	local pid
	[ -f "$STATE/versitygw.pid" ] || return 1
	pid=$(cat "$STATE/versitygw.pid")
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q versitygw || return 1
	echo "$pid"
}

# standby_wanted: true when the caller asked for a standby.
standby_wanted() { [ "${STANDBY:-0}" = 1 ] || [ "${MCPRES_STANDBY:-0}" = 1 ]; }

pg_root() { # print the cluster directory recorded in the state
	[ -f "$STATE/pgroot" ] || return 1
	cat "$STATE/pgroot"
}

# ---------------------------------------------------------------- postgres

start_postgres() {
	[ -x "$PG_BIN/initdb" ] || die "PostgreSQL 15 server not found at $PG_BIN (apt-get install postgresql-15, or set MCPRES_PG_BIN)"
	local root port attempt
	root=$(mktemp -d "$PG_PARENT/mcpres-pg.XXXXXX")
	echo "$root" >"$STATE/pgroot"
	chmod 700 "$root"
	[ "$(id -u)" = 0 ] && chown postgres: "$root"
	say "postgres: initdb in $root/data"
	if ! as_pg "$PG_BIN/initdb" -D "$root/data" -U postgres --auth=trust -E UTF8 --no-sync >"$STATE/initdb.log" 2>&1; then
		cat "$STATE/initdb.log" >&2
		die "initdb failed"
	fi
	local extra=""
	if standby_wanted; then
		# A standby streams from it; pg_stat_statements lets a benchmark
		# count what the primary executes.
		extra="-c wal_level=replica -c max_wal_senders=10 -c shared_preload_libraries=pg_stat_statements"
	fi
	for attempt in 1 2 3; do
		port=$(free_port "$@")
		say "postgres: starting on 127.0.0.1:$port"
		if as_pg "$PG_BIN/pg_ctl" -D "$root/data" -l "$root/postgres.log" -w -t 60 \
			-o "-p $port -k $root -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 $extra" \
			start >/dev/null 9>&-; then
			if "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port" -t 30; then
				PG_PORT=$port
				return 0
			fi
		fi
		say "postgres: start on port $port failed (attempt $attempt):"
		tail -n 5 "$root/postgres.log" >&2 || true
		as_pg "$PG_BIN/pg_ctl" -D "$root/data" -m immediate -w stop >/dev/null 2>&1 || true
	done
	die "postgres did not start"
}

# ---------------------------------------------------------------- standby

STANDBY_ROLE=mcpres_replicator

# standby_port: print the standby's port recorded in the state, or fail.
standby_port() {
	[ -f "$STATE/standby.port" ] || return 1
	cat "$STATE/standby.port"
}

# standby_streaming PORT: true when the server on PORT is in recovery and
# its WAL receiver streams.
standby_streaming() {
	local out
	out=$("$PG_BIN/psql" -XAtq -h 127.0.0.1 -p "$1" -U postgres -d postgres \
		-c "SELECT pg_is_in_recovery() AND EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming')" 2>/dev/null) || return 1
	[ "$out" = t ]
}

# start_standby EXCLUDED-PORTS...: a streaming hot standby of the primary
# on PG_PORT: a replication role and a loopback replication line in the
# primary's pg_hba.conf, pg_basebackup -R into $root/standby, then the
# standby started on a free port and waited for until it streams.
start_standby() {
	local root port attempt i
	root=$(pg_root) || die "no primary cluster"
	"$PG_BIN/psql" -Xq -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres \
		-c "DO \$\$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$STANDBY_ROLE') THEN CREATE ROLE $STANDBY_ROLE REPLICATION LOGIN; END IF; END \$\$" >/dev/null
	if ! grep -Eq "^host[[:space:]]+replication[[:space:]]+($STANDBY_ROLE|all)[[:space:]]+127\.0\.0\.1/32" "$root/data/pg_hba.conf"; then
		printf 'host replication %s 127.0.0.1/32 trust\n' "$STANDBY_ROLE" | as_pg tee -a "$root/data/pg_hba.conf" >/dev/null
		"$PG_BIN/psql" -Xq -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c 'SELECT pg_reload_conf()' >/dev/null
	fi
	say "standby: pg_basebackup -R into $root/standby"
	if ! as_pg "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$PG_PORT" -U "$STANDBY_ROLE" -D "$root/standby" \
		-R -X stream -c fast --no-sync >"$STATE/basebackup.log" 2>&1; then
		cat "$STATE/basebackup.log" >&2
		die "pg_basebackup failed"
	fi
	for attempt in 1 2 3; do
		port=$(free_port "$@")
		echo "$port" >"$STATE/standby.port"
		if run_standby "$port"; then
			STANDBY_PORT=$port
			return 0
		fi
		say "standby: start on port $port failed (attempt $attempt):"
		tail -n 5 "$root/standby.log" >&2 || true
		as_pg "$PG_BIN/pg_ctl" -D "$root/standby" -m immediate -w stop >/dev/null 2>&1 || true
	done
	die "the standby did not start"
}

# run_standby PORT: start the standby's cluster on PORT and wait (up to
# 60 s) until it is in recovery and streaming.
run_standby() {
	local root i
	root=$(pg_root) || return 1
	say "standby: starting on 127.0.0.1:$1"
	as_pg "$PG_BIN/pg_ctl" -D "$root/standby" -l "$root/standby.log" -w -t 60 \
		-o "-p $1 -k $root -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 -c hot_standby=on -c shared_preload_libraries=pg_stat_statements" \
		start >/dev/null 9>&- || return 1
	for i in $(seq 1 300); do
		standby_streaming "$1" && return 0
		sleep 0.2
	done
	return 1
}

stop_standby() {
	local root
	root=$(pg_root) || return 0
	if [ -f "$root/standby/postmaster.pid" ]; then
		say "standby: stopping ($root/standby)"
		as_pg "$PG_BIN/pg_ctl" -D "$root/standby" -m "${1:-fast}" -w -t 30 stop >/dev/null 2>&1 ||
			as_pg "$PG_BIN/pg_ctl" -D "$root/standby" -m immediate -w stop >/dev/null 2>&1 || true
	fi
}

stop_postgres() {
	local root
	stop_standby
	rm -f "$STATE/standby.port" "$STATE/basebackup.log"
	root=$(pg_root) || return 0
	case $root in */mcpres-pg.*) ;; *) die "refusing to remove unexpected cluster directory '$root'" ;; esac
	if [ -f "$root/data/postmaster.pid" ]; then
		say "postgres: stopping ($root)"
		as_pg "$PG_BIN/pg_ctl" -D "$root/data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
			as_pg "$PG_BIN/pg_ctl" -D "$root/data" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$root"
	rm -f "$STATE/pgroot" "$STATE/initdb.log"
}

# ---------------------------------------------------------------- versitygw

start_versitygw() {
	local bin port admin attempt i pid
	bin=$(find_versitygw)
	mkdir -p "$STATE/s3/data" "$STATE/s3/versions" "$STATE/s3/iam"
	for attempt in 1 2 3; do
		port=$(free_port "$@")
		admin=$(free_port "$@" "$port")
		say "versitygw: starting S3 on 127.0.0.1:$port, admin on 127.0.0.1:$admin"
		nohup "$bin" --port "127.0.0.1:$port" --admin-port "127.0.0.1:$admin" \
			--access "$S3_ACCESS" --secret "$S3_SECRET" --region "$REGION" \
			--iam-dir "$STATE/s3/iam" --health /health --quiet \
			posix --versioning-dir "$STATE/s3/versions" "$STATE/s3/data" \
			>"$STATE/versitygw.log" 2>&1 </dev/null 9>&- &
		pid=$!
		echo "$pid" >"$STATE/versitygw.pid"
		for i in $(seq 1 150); do
			kill -0 "$pid" 2>/dev/null || break
			if http_ok "$port" /health && (exec 3<>"/dev/tcp/127.0.0.1/$admin") 2>/dev/null; then
				S3_PORT=$port
				S3_ADMIN_PORT=$admin
				return 0
			fi
			sleep 0.2
		done
		give_up versitygw "$pid" "$port" "$attempt"
	done
	die "versitygw did not start"
}

# give_up NAME PID PORT ATTEMPT: a service that did not come up on PORT:
# show the end of its log, stop it, forget its pid (the caller retries on
# another port).
give_up() {
	say "$1: did not come up on port $3 (attempt $4):"
	tail -n 5 "$STATE/$1.log" >&2 || true
	kill "$2" 2>/dev/null || true
	wait "$2" 2>/dev/null || true
	rm -f "$STATE/$1.pid"
}

# stop_pid NAME PID: TERM, up to 10 s to exit, then KILL.
stop_pid() {
	local i
	say "$1: stopping (pid $2)"
	kill "$2" 2>/dev/null || true
	for i in $(seq 1 50); do
		kill -0 "$2" 2>/dev/null || break
		sleep 0.2
	done
	kill -9 "$2" 2>/dev/null || true
}

stop_versitygw() {
	local pid
	if pid=$(vgw_pid); then
		stop_pid versitygw "$pid"
	fi
	rm -rf "$STATE/s3"
	rm -f "$STATE/versitygw.pid" "$STATE/versitygw.log"
}

# ---------------------------------------------------------------- minio

start_minio() {
	local bin=$1 port console attempt i pid
	shift
	mkdir -p "$STATE/minio/data"
	for attempt in 1 2 3; do
		port=$(free_port "$@")
		console=$(free_port "$@" "$port")
		say "minio: starting S3 on 127.0.0.1:$port"
		MINIO_ROOT_USER=$MINIO_ACCESS MINIO_ROOT_PASSWORD=$MINIO_SECRET MINIO_BROWSER=off \
			MINIO_UPDATE=off MINIO_CONFIG_DIR=$STATE/minio/config HOME=$STATE/minio \
			nohup "$bin" server --quiet --address "127.0.0.1:$port" --console-address "127.0.0.1:$console" \
			"$STATE/minio/data" >"$STATE/minio.log" 2>&1 </dev/null 9>&- &
		pid=$!
		echo "$pid" >"$STATE/minio.pid"
		for i in $(seq 1 150); do
			kill -0 "$pid" 2>/dev/null || break
			if http_ok "$port" /minio/health/live; then
				MINIO_PORT=$port
				return 0
			fi
			sleep 0.2
		done
		give_up minio "$pid" "$port" "$attempt"
	done
	die "minio did not start"
}

stop_minio() {
	local pid
	if pid=$(minio_pid); then
		stop_pid minio "$pid"
	fi
	rm -rf "$STATE/minio"
	rm -f "$STATE/minio.pid" "$STATE/minio.log" "$ENV_FILE.minio"
}

# ---------------------------------------------------------------- hydra

# The key set Hydra publishes beside its own signing keys, into which the
# identity tests upload a key of their own (PUT /admin/keys/SET/KID) to sign
# the tokens Hydra will not mint (expired, wrong audience, ...).
HYDRA_TEST_KEYS=mcpres.test

find_hydra() { find_optional hydra MCPRES_HYDRA; }

hydra_pid() { service_pid hydra; }

# start_hydra BIN EXCLUDED-PORTS...: migrate a hydra database in our
# cluster, then serve Hydra (dev mode: plain HTTP on loopback) until down.
start_hydra() {
	local bin=$1 pub admin attempt i pid dsn
	shift
	"$PG_BIN/psql" -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c 'CREATE DATABASE hydra' >/dev/null
	dsn="postgres://postgres@127.0.0.1:$PG_PORT/hydra?sslmode=disable"
	say "hydra: migrating its database"
	if ! DSN=$dsn "$bin" migrate sql up -e --yes >"$STATE/hydra-migrate.log" 2>&1; then
		tail -n 20 "$STATE/hydra-migrate.log" >&2
		die "hydra migrations failed"
	fi
	HYDRA_SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
	for attempt in 1 2 3; do
		pub=$(free_port "$@")
		admin=$(free_port "$@" "$pub")
		say "hydra: starting public on 127.0.0.1:$pub, admin on 127.0.0.1:$admin"
		# Login and consent URLs are never served: the tests read the
		# challenge from the redirect and accept it on the admin API.
		DSN=$dsn SECRETS_SYSTEM=$HYDRA_SECRET STRATEGIES_ACCESS_TOKEN=jwt \
			URLS_SELF_ISSUER="http://127.0.0.1:$pub/" URLS_LOGIN="http://127.0.0.1:$pub/mcpres-test/login" \
			URLS_CONSENT="http://127.0.0.1:$pub/mcpres-test/consent" \
			SERVE_PUBLIC_HOST=127.0.0.1 SERVE_PUBLIC_PORT=$pub SERVE_ADMIN_HOST=127.0.0.1 SERVE_ADMIN_PORT=$admin \
			OAUTH2_ALLOWED_TOP_LEVEL_CLAIMS=groups,tenant \
			WEBFINGER_JWKS_BROADCAST_KEYS=hydra.openid.id-token,hydra.jwt.access-token,$HYDRA_TEST_KEYS \
			LOG_LEVEL=warn SQA_OPT_OUT=true \
			nohup "$bin" serve all --dev --sqa-opt-out >"$STATE/hydra.log" 2>&1 </dev/null 9>&- &
		pid=$!
		echo "$pid" >"$STATE/hydra.pid"
		for i in $(seq 1 150); do
			kill -0 "$pid" 2>/dev/null || break
			if http_ok "$pub" /health/ready && http_ok "$admin" /health/ready; then
				HYDRA_PORT=$pub
				HYDRA_ADMIN_PORT=$admin
				return 0
			fi
			sleep 0.2
		done
		give_up hydra "$pid" "$pub" "$attempt"
	done
	die "hydra did not start"
}

stop_hydra() {
	local pid
	if pid=$(hydra_pid); then
		stop_pid hydra "$pid"
	fi
	rm -f "$STATE/hydra.pid" "$STATE/hydra.log" "$STATE/hydra-migrate.log"
}

# ---------------------------------------------------------------- commands

# running: true when the recorded services are alive and answering.
running() {
	[ -f "$ENV_FILE" ] || return 1
	local root
	root=$(pg_root) || return 1
	vgw_pid >/dev/null || return 1
	# shellcheck disable=SC1090
	(
		. "$ENV_FILE"
		pg_port=${MCPRES_POSTGRES_URL##*127.0.0.1:}
		pg_port=${pg_port%%/*}
		s3_port=${MCPRES_S3_ENDPOINT##*:}
		"$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$pg_port" -t 5 && http_ok "$s3_port" /health
	) || return 1
	# Hydra, when it was started, must still answer.
	if grep -q MCPRES_OAUTH_ISSUER "$ENV_FILE"; then
		hydra_pid >/dev/null || return 1
		(
			. "$ENV_FILE"
			p=${MCPRES_OAUTH_ISSUER##*127.0.0.1:}
			http_ok "${p%%/*}" /health/ready
		) || return 1
	fi
	# The standby, when it was started (and not stopped by standby-stop),
	# must be streaming; one that was asked for must exist.
	if grep -q MCPRES_POSTGRES_STANDBY_URL "$ENV_FILE"; then
		[ -f "$STATE/standby.stopped" ] || standby_streaming "$(standby_port)" || return 1
	elif standby_wanted; then
		return 1
	fi
	# MinIO, when it was started, must still answer too.
	if [ -f "$ENV_FILE.minio" ]; then
		minio_pid >/dev/null || return 1
		(
			. "$ENV_FILE.minio"
			http_ok "${MCPRES_S3_ENDPOINT##*:}" /minio/health/live
		) || return 1
	fi
}

lock() {
	mkdir -p "$STATE"
	if command -v flock >/dev/null 2>&1; then
		# fd 9 holds the lock; the daemons are started with 9>&- so they do not inherit it.
		exec 9>"$STATE/.lock"
		flock -w 300 9 || die "another services.sh holds $STATE/.lock"
	fi
}

stop_all() {
	stop_hydra
	stop_minio
	stop_versitygw
	stop_postgres
	rm -f "$ENV_FILE" "$STATE/standby.stopped"
}

cmd_up() {
	lock
	if running; then
		say "already running"
		cat "$ENV_FILE"
		return 0
	fi
	if [ -f "$ENV_FILE" ] || [ -f "$STATE/pgroot" ] || [ -f "$STATE/versitygw.pid" ] || [ -f "$STATE/minio.pid" ] || [ -f "$STATE/hydra.pid" ]; then
		say "found stale or partial state; cleaning it up first"
		stop_all
	fi
	local ok=0
	trap 'if [ "$ok" = 0 ]; then say "start failed; cleaning up"; stop_all; fi' EXIT
	S3_ACCESS=mcpresroot
	S3_SECRET=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
	start_postgres
	if standby_wanted; then
		start_standby "$PG_PORT"
	fi
	start_versitygw "$PG_PORT" ${STANDBY_PORT:+"$STANDBY_PORT"}
	local minio
	minio=$(find_minio)
	if [ -n "$minio" ]; then
		MINIO_ACCESS=mcpresminio
		MINIO_SECRET=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
		start_minio "$minio" "$PG_PORT" "$S3_PORT" "$S3_ADMIN_PORT" ${STANDBY_PORT:+"$STANDBY_PORT"}
		{
			printf "export MCPRES_POSTGRES_URL='%s'\n" "postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
			printf "export MCPRES_S3_ENDPOINT='%s'\n" "http://127.0.0.1:$MINIO_PORT"
			printf "export MCPRES_S3_ACCESS_KEY='%s'\n" "$MINIO_ACCESS"
			printf "export MCPRES_S3_SECRET_KEY='%s'\n" "$MINIO_SECRET"
			printf "export MCPRES_S3_REGION='%s'\n" "$REGION"
			printf "export MCPRES_S3_ADMIN_ENDPOINT='%s'\n" none
			if [ -n "${STANDBY_PORT:-}" ]; then
				printf "export MCPRES_POSTGRES_STANDBY_URL='%s'\n" "postgres://postgres@127.0.0.1:$STANDBY_PORT/postgres?sslmode=disable"
			fi
		} >"$ENV_FILE.minio"
	else
		say "minio: no binary found (scripts/tools.sh minio builds one); not started"
	fi
	local hydra
	hydra=$(find_hydra)
	if [ -n "$hydra" ]; then
		start_hydra "$hydra" "$PG_PORT" "$S3_PORT" "$S3_ADMIN_PORT" ${MINIO_PORT:+"$MINIO_PORT"} ${STANDBY_PORT:+"$STANDBY_PORT"}
	elif [ "${MCPRES_HYDRA:-}" = none ]; then
		say "hydra: not started (MCPRES_HYDRA=none)"
	else
		say "hydra: no binary found (scripts/tools.sh hydra builds one); not started"
	fi
	{
		printf "export MCPRES_POSTGRES_URL='%s'\n" "postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
		printf "export MCPRES_S3_ENDPOINT='%s'\n" "http://127.0.0.1:$S3_PORT"
		printf "export MCPRES_S3_ACCESS_KEY='%s'\n" "$S3_ACCESS"
		printf "export MCPRES_S3_SECRET_KEY='%s'\n" "$S3_SECRET"
		printf "export MCPRES_S3_REGION='%s'\n" "$REGION"
		printf "export MCPRES_S3_ADMIN_ENDPOINT='%s'\n" "http://127.0.0.1:$S3_ADMIN_PORT"
		if [ -n "${STANDBY_PORT:-}" ]; then
			printf "export MCPRES_POSTGRES_STANDBY_URL='%s'\n" "postgres://postgres@127.0.0.1:$STANDBY_PORT/postgres?sslmode=disable"
		fi
		if [ -n "${HYDRA_PORT:-}" ]; then
			printf "export MCPRES_OAUTH_ISSUER='%s'\n" "http://127.0.0.1:$HYDRA_PORT/"
			printf "export MCPRES_OAUTH_ADMIN_URL='%s'\n" "http://127.0.0.1:$HYDRA_ADMIN_PORT"
			printf "export MCPRES_OAUTH_TEST_KEYS='%s'\n" "$HYDRA_TEST_KEYS"
		fi
	} >"$ENV_FILE.tmp"
	mv "$ENV_FILE.tmp" "$ENV_FILE"
	ok=1
	trap - EXIT
	say "up: postgres on 127.0.0.1:$PG_PORT${STANDBY_PORT:+ (standby on 127.0.0.1:$STANDBY_PORT)}, S3 on 127.0.0.1:$S3_PORT (admin 127.0.0.1:$S3_ADMIN_PORT)${HYDRA_PORT:+, hydra on 127.0.0.1:$HYDRA_PORT (admin 127.0.0.1:$HYDRA_ADMIN_PORT)}"
	cat "$ENV_FILE"
}

cmd_down() {
	lock
	if [ ! -f "$ENV_FILE" ] && [ ! -f "$STATE/pgroot" ] && [ ! -f "$STATE/versitygw.pid" ] && [ ! -f "$STATE/minio.pid" ] && [ ! -f "$STATE/hydra.pid" ]; then
		say "nothing to stop"
		return 0
	fi
	stop_all
	say "down"
}

cmd_env() {
	running || die "services are not running; start them with: scripts/services.sh up"
	case ${1:-} in
	"") cat "$ENV_FILE" ;;
	minio)
		[ -f "$ENV_FILE.minio" ] || die "MinIO is not running (no minio binary was found at up; scripts/tools.sh minio builds one)"
		cat "$ENV_FILE.minio"
		;;
	*) die "usage: $0 env [minio]" ;;
	esac
}

# cmd_standby stop|start: crash the running standby (pg_ctl -m immediate)
# or start it again and wait until it streams.
cmd_standby() {
	lock
	local port
	port=$(standby_port) || die "no standby is running; start the services with: scripts/services.sh up --standby"
	case $1 in
	stop)
		stop_standby immediate
		touch "$STATE/standby.stopped"
		;;
	start)
		if standby_streaming "$port"; then
			say "standby: already streaming on 127.0.0.1:$port"
		else
			run_standby "$port" || die "the standby did not come back on port $port"
		fi
		rm -f "$STATE/standby.stopped"
		;;
	esac
}

cmd_status() {
	if running; then
		say "running"
		return 0
	fi
	say "not running"
	return 1
}

case ${1:-} in
up)
	case ${2:-} in
	--standby) STANDBY=1 ;;
	"") ;;
	*)
		echo "usage: $0 up [--standby]" >&2
		exit 2
		;;
	esac
	cmd_up
	;;
standby-stop) cmd_standby stop ;;
standby-start) cmd_standby start ;;
down) cmd_down ;;
env) cmd_env "${2:-}" ;;
status) cmd_status ;;
*)
	echo "usage: $0 up [--standby]|env [minio]|status|standby-stop|standby-start|down" >&2
	exit 2
	;;
esac
