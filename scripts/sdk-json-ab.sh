#!/usr/bin/env bash
# sdk-json-ab.sh measures what one line of the go-sdk costs this server.
# The go-sdk's internal/json.Unmarshal decodes every message through a
# segmentio Decoder over a bytes.Reader, which allocates and clears a
# 32 KiB buffer per call, several times per request (the JSON-RPC message
# over HTTP, its _meta twice, the two _meta values it re-marshals, the
# params). scripts/go-sdk-json.patch decodes the bytes in place with
# segmentio's Parse and the same flag, as an upstream fix would.
#
# The script copies the go-sdk version go.mod names out of the module
# cache, applies the patch, builds this checkout against it with a
# -modfile of its own (go.mod and go.sum are not touched), and builds it
# as released. Then, each side by side in one run:
#
#   1. under C clients over streamable HTTP, interleaved pairs:
#        scripts/load-ab.sh RELEASED PATCHED PAIRS C DURATION
#      its "old" is the go-sdk as released, its "new" the patched one;
#   2. N sequential same-row reads over stdio, calls interleaved:
#        scripts/peers.sh --only ours,baseline --baseline PATCHED --calls N
#      its "ours" is this checkout as released, its "baseline" the patched one.
#
#   scripts/sdk-json-ab.sh [PAIRS [CLIENTS [DURATION [CALLS]]]]   # 3 64 15s 2000: about 4 minutes
#
# Needs the services (eval "$(scripts/services.sh up)") and MCPRES_VERSITYGW.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pairs=${1:-3}
clients=${2:-64}
duration=${3:-15s}
calls=${4:-2000}
[ -n "${MCPRES_POSTGRES_URL:-}" ] || { echo "sdk-json-ab: start the services first: eval \"\$(scripts/services.sh up)\"" >&2; exit 2; }
cd "$ROOT"
out=$(mktemp -d /tmp/sdk-json-ab.XXXXXX)
trap 'rm -rf "$out"' EXIT

sdk=github.com/modelcontextprotocol/go-sdk
go mod download "$sdk"
version=$(go list -m -f '{{.Version}}' "$sdk")
cp -R "$(go list -m -f '{{.Dir}}' "$sdk")" "$out/go-sdk"
chmod -R u+w "$out/go-sdk"
patch --quiet -d "$out/go-sdk" -p1 <scripts/go-sdk-json.patch
cp go.mod "$out/patched.mod"
cp go.sum "$out/patched.sum"
go mod edit -modfile="$out/patched.mod" -replace "$sdk=$out/go-sdk"
go build -o "$out/released/mcp-resources" ./cmd/mcp-resources
go build -modfile="$out/patched.mod" -o "$out/patched/mcp-resources" ./cmd/mcp-resources
echo "sdk-json-ab: $sdk $version as released (old, ours) against it with scripts/go-sdk-json.patch (new, baseline), this checkout at $(git rev-parse --short HEAD)"

rc=0
echo "# scripts/load-ab.sh RELEASED PATCHED $pairs $clients $duration"
scripts/load-ab.sh "$out/released/mcp-resources" "$out/patched/mcp-resources" "$pairs" "$clients" "$duration" || rc=$?
echo
echo "# scripts/peers.sh --only ours,baseline --baseline PATCHED --calls $calls"
scripts/peers.sh --only ours,baseline --baseline "$out/patched/mcp-resources" --calls "$calls" || { s=$?; [ "$rc" != 0 ] || rc=$s; }
exit "$rc"
