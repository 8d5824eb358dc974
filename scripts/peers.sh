#!/usr/bin/env bash
# peers.sh runs cmd/mcp-peers: one same-row read through our server
# (serve --postgres, stdio) against the same row through
# @modelcontextprotocol/server-postgres 0.6.2 (query) and @bytebase/dbhub
# 1.4.0 (execute_sql), one go-sdk client, calls interleaved, on loopback.
# It prepares what it needs:
#
#   - the throwaway services (scripts/services.sh up) unless they are
#     running already; the ones it started it stops on exit;
#   - a database mcpres_peers, migrated and seeded (mcp-resources migrate,
#     seed; the seed's objects go to a bucket "peers");
#   - the two npm packages at exact versions in .cache/peers (gitignored;
#     install scripts not run), and mcp-resources and mcp-peers built from
#     this checkout into .cache/peers/bin;
#
# then runs mcp-peers with the arguments given (defaults: 2,000 calls per
# server after 200 of warm-up):
#
#   scripts/peers.sh
#   scripts/peers.sh --calls 2000 --starts 20
#   scripts/peers.sh --baseline /tmp/old/mcp-resources   # an older build as one more server
#   scripts/peers.sh --only ours,baseline --baseline /tmp/old/mcp-resources --calls 2000
#                                       # our two alone: no Node.js, no npm packages
#
# Knobs (environment): MCPRES_NODE, a Node.js >= 22.5 (dbhub's floor;
# default: node on PATH if new enough).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=$ROOT/.cache/peers
SERVER_POSTGRES=0.6.2
DBHUB=1.4.0
say() { printf 'peers: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 2; }

cd "$ROOT"

# The peers run unless --only leaves both out.
only=all
prev=
for a in "$@"; do
	case $a in --only=*) only=${a#--only=} ;; esac
	[ "$prev" = --only ] && only=$a
	prev=$a
done
peers=1
case ,$only, in
*,server-postgres,* | *,dbhub,* | ,all,) ;;
*) peers=0 ;;
esac

# Node >= 22.5 for dbhub.
node_ok() {
	"$1" -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a===22&&b>=5)?0:1)' 2>/dev/null
}
NODE=${MCPRES_NODE:-$(command -v node || true)}
if [ "$peers" = 1 ]; then
	[ -n "$NODE" ] && node_ok "$NODE" || die "need Node.js >= 22.5 for dbhub $DBHUB: set MCPRES_NODE (found: ${NODE:-none} $("${NODE:-false}" --version 2>/dev/null || true))"
	command -v npm >/dev/null || die "need npm"
fi

# Services.
started=0
if [ -z "${MCPRES_POSTGRES_URL:-}" ]; then
	if ! scripts/services.sh status 2>/dev/null; then
		started=1
	fi
	eval "$(MCPRES_HYDRA=${MCPRES_HYDRA:-none} MCPRES_MINIO=${MCPRES_MINIO:-none} scripts/services.sh up)"
fi
if [ "$started" = 1 ]; then
	trap 'scripts/services.sh down' EXIT
fi

# The npm packages, at exact versions.
installed() {
	node_version=$("$NODE" -p "require('$CACHE/node_modules/$1/package.json').version" 2>/dev/null || true)
	[ "$node_version" = "$2" ]
}
if [ "$peers" = 1 ] && { ! installed @modelcontextprotocol/server-postgres "$SERVER_POSTGRES" || ! installed @bytebase/dbhub "$DBHUB"; }; then
	say "installing the peers into $CACHE"
	mkdir -p "$CACHE"
	npm install --prefix "$CACHE" --no-save --no-audit --no-fund --ignore-scripts --loglevel=error \
		"@modelcontextprotocol/server-postgres@$SERVER_POSTGRES" "@bytebase/dbhub@$DBHUB" >&2
fi

# Our binaries, from this checkout.
mkdir -p "$CACHE/bin"
go build -o "$CACHE/bin/mcp-resources" ./cmd/mcp-resources
go build -o "$CACHE/bin/mcp-peers" ./cmd/mcp-peers

# The database: the reference schema and the seed.
base=${MCPRES_POSTGRES_URL%%\?*}
query=${MCPRES_POSTGRES_URL#"$base"}
DB_URL=${base%/*}/mcpres_peers$query
if ! psql "$MCPRES_POSTGRES_URL" -Atqc "SELECT 1 FROM pg_database WHERE datname = 'mcpres_peers'" | grep -q 1; then
	psql "$MCPRES_POSTGRES_URL" -qc 'CREATE DATABASE mcpres_peers' >&2
fi
"$CACHE/bin/mcp-resources" migrate --postgres "$DB_URL" >&2
"$CACHE/bin/mcp-resources" seed --postgres "$DB_URL" --bucket peers \
	--bucket-endpoint "$MCPRES_S3_ENDPOINT" --bucket-path-style \
	--bucket-access-key "$MCPRES_S3_ACCESS_KEY" --bucket-secret-key "$MCPRES_S3_SECRET_KEY" >&2

say "node $([ "$peers" = 1 ] && "$NODE" --version || echo "not needed"), $(go version | cut -d' ' -f3), commit $(git rev-parse --short HEAD)"
"$CACHE/bin/mcp-peers" --postgres "$DB_URL" --server "$CACHE/bin/mcp-resources" \
	--bucket peers --bucket-endpoint "$MCPRES_S3_ENDPOINT" \
	--peers "$CACHE" --node "${NODE:-node}" "$@"
