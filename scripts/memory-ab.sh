#!/usr/bin/env bash
# memory-ab.sh measures the resident memory of this checkout's
# mcp-resources against an older binary in four settings, each side by
# side in one run, and the S3 object reads' p50 under load:
#
#   1. after N sequential same-row reads over stdio, calls interleaved:
#        scripts/peers.sh --only ours,baseline --baseline OLD --calls 2000
#   2. under C clients over streamable HTTP, interleaved pairs (the
#      server's peak RSS, and the p50 of each kind of request, object
#      among them):
#        scripts/load-ab.sh OLD NEW 3 64 15s
#   3. holding N stateful sessions, each subscribed to one body:
#        scripts/sessions-ab.sh OLD NEW 3 1000
#   4. serving a resources file of T templates, after its first read:
#        MCPRES_BENCH_TEMPLATES=1000,2000 MCPRES_BENCH_BINARIES=base=OLD \
#          go test -run '^$' -bench 'BenchmarkExecToFirstReadBigFile$' -benchtime 3x ./cmd/mcp-resources/
#
#   scripts/memory-ab.sh OLD-BINARY            # about 6 minutes on 2 cores
#   scripts/memory-ab.sh --quick OLD-BINARY    # short runs, to try it out
#
# NEW is this checkout's build. Memory is VmHWM (the peak) and VmRSS of
# the server process, from /proc/PID/status. Needs the services (eval
# "$(scripts/services.sh up)") and MCPRES_VERSITYGW. Every part runs even
# when one fails; the exit status is the first failure's.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quick=0
if [ "${1:-}" = --quick ]; then
	quick=1
	shift
fi
old=${1:?usage: memory-ab.sh [--quick] OLD-BINARY}
old=$(cd "$(dirname "$old")" && pwd)/$(basename "$old")
[ -x "$old" ] || { echo "memory-ab: $old is not an executable" >&2; exit 2; }
[ -n "${MCPRES_POSTGRES_URL:-}" ] || { echo "memory-ab: start the services first: eval \"\$(scripts/services.sh up)\"" >&2; exit 2; }
if [ "$quick" = 1 ]; then
	calls=300 pairs=1 clients=16 duration=4s rounds=1 sessions=200 templates=1000 benchtime=1x
else
	calls=2000 pairs=3 clients=64 duration=15s rounds=3 sessions=1000 templates=1000,2000 benchtime=3x
fi

cd "$ROOT"
dir=$(mktemp -d /tmp/memory-ab.XXXXXX)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/mcp-resources" ./cmd/mcp-resources
new=$dir/mcp-resources

status=0
part() { # part TITLE COMMAND...
	echo
	echo "## $1"
	shift
	echo "# $*"
	"$@" 2>&1 || { rc=$?; echo "memory-ab: exit $rc"; [ "$status" != 0 ] || status=$rc; }
}
echo "memory-ab: $old against this checkout ($(git rev-parse --short HEAD))"
part "$calls sequential reads over stdio" scripts/peers.sh --only ours,baseline --baseline "$old" --calls "$calls"
part "$clients clients, $pairs pairs" scripts/load-ab.sh "$old" "$new" "$pairs" "$clients" "$duration"
part "$sessions sessions, one subscription each" scripts/sessions-ab.sh "$old" "$new" "$rounds" "$sessions"
part "resources files of $templates templates" env MCPRES_BENCH_TEMPLATES="$templates" MCPRES_BENCH_BINARIES=base="$old" \
	go test -run '^$' -bench 'BenchmarkExecToFirstReadBigFile$' -benchmem -benchtime "$benchtime" -count 1 -timeout 10m ./cmd/mcp-resources/
exit "$status"
