#!/usr/bin/env bash
# bench.sh runs the benchmarks on this checkout's commit and writes
# BENCHMARKS.md from that one run, with the raw output of every entry in
# docs/bench/. The entries (what runs, with which command, into which
# table) are the list benchpage.Entries in internal/benchpage/entries.go.
#
#   scripts/bench.sh                 # the full run: about 25 minutes on 2 cores
#   scripts/bench.sh --quick         # short runs, a few minutes, to try it out
#   scripts/bench.sh --only load-ab,startup
#   scripts/bench.sh --baseline REV  # the baseline commit (default below)
#   scripts/bench.sh --mem-baseline REV  # the memory baseline commit (default below)
#   scripts/bench.sh --render        # the page again from docs/bench, running nothing
#
# It starts the services (scripts/services.sh up) unless they are running,
# and stops those it started; builds this checkout's mcp-resources
# (BENCH_HEAD_BIN), and the baseline's (BENCH_BASE_BIN) and the memory
# baseline's (BENCH_MEM_BASE_BIN) each in a temporary git worktree,
# removed at the end. An entry whose benchmark is missing,
# skips itself or cannot run (peers needs Node.js >= 22.5) is reported on
# the page as not run; the page is written in every case.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The baseline: the commit the earlier comparisons were made against.
BASELINE=${BENCH_BASELINE:-5f643d6}
# The memory baseline: the commit whose memory the memory entry compares
# with (and whose S3 object reads' p50).
MEM_BASELINE=${BENCH_MEM_BASE:-ec54ebe}
say() { printf 'bench: %s\n' "$*" >&2; }

args=()
render=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) args+=(--quick) ;;
	--only) args+=(--only "${2:?--only needs entry names}"); shift ;;
	--baseline) BASELINE=${2:?--baseline needs a commit}; shift ;;
	--mem-baseline) MEM_BASELINE=${2:?--mem-baseline needs a commit}; shift ;;
	--render) render=1 ;;
	-h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) say "unknown argument $1 (--help)"; exit 2 ;;
	esac
	shift
done

cd "$ROOT"
if [ "$render" = 1 ]; then
	exec go run ./internal/benchpage/cmd --render
fi
base=$(git rev-parse --short "$BASELINE^{commit}") || { say "no commit $BASELINE"; exit 2; }
git merge-base --is-ancestor "$base" HEAD || { say "$base is not an ancestor of HEAD"; exit 2; }
membase=$(git rev-parse --short "$MEM_BASELINE^{commit}") || { say "no commit $MEM_BASELINE"; exit 2; }
git merge-base --is-ancestor "$membase" HEAD || { say "$membase is not an ancestor of HEAD"; exit 2; }

work=$(mktemp -d /tmp/bench.XXXXXX)
started=0
cleanup() {
	git worktree remove --force "$work/base" 2>/dev/null || true
	git worktree remove --force "$work/mem-base" 2>/dev/null || true
	rm -rf "$work"
	if [ "$started" = 1 ]; then scripts/services.sh down >&2 || true; fi
}
trap cleanup EXIT

if ! scripts/services.sh status >/dev/null 2>&1; then started=1; fi
eval "$(scripts/services.sh up --standby)"
export MCPRES_VERSITYGW=${MCPRES_VERSITYGW:-$(command -v versitygw || echo "$(go env GOPATH)/bin/versitygw")}

say "building mcp-resources at $(git rev-parse --short HEAD), at the baseline $base and at the memory baseline $membase"
go build -o "$work/head/mcp-resources" ./cmd/mcp-resources
export BENCH_HEAD_BIN=$work/head/mcp-resources BENCH_BASE=$base BENCH_BASE_BIN=$work/base-bin/mcp-resources \
	BENCH_MEM_BASE=$membase BENCH_MEM_BASE_BIN=$work/mem-base-bin/mcp-resources
if git worktree add --quiet --detach "$work/base" "$base" >&2 &&
	(cd "$work/base" && go build -o "$BENCH_BASE_BIN" ./cmd/mcp-resources); then :; else
	say "could not build the baseline $base: its entries will be reported as not run"
fi
if git worktree add --quiet --detach "$work/mem-base" "$membase" >&2 &&
	(cd "$work/mem-base" && go build -o "$BENCH_MEM_BASE_BIN" ./cmd/mcp-resources); then :; else
	say "could not build the memory baseline $membase: its entry will be reported as not run"
fi

go run ./internal/benchpage/cmd --baseline "$base" --mem-baseline "$membase" "${args[@]}"
