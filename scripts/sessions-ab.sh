#!/usr/bin/env bash
# sessions-ab.sh measures the resident memory of two mcp-resources
# binaries holding N stateful streamable-HTTP sessions, each subscribed to
# one body: cmd/mcp-load --sessions N against each binary in turn (old,
# new; new, old; ...), on this machine's services. Each run prints the
# server process's VmRSS before the sessions and with them open, its
# VmHWM (the peak) and the growth per session; last, the median of each
# figure over each side's runs and the ratio new / old.
#
#   scripts/sessions-ab.sh OLD-BINARY NEW-BINARY [ROUNDS [SESSIONS]]
#   scripts/sessions-ab.sh /tmp/old/mcp-resources .cache/peers/bin/mcp-resources 3 1000
#
# Needs the services (eval "$(scripts/services.sh up)") and
# MCPRES_VERSITYGW. Each run's output goes to $AB_OUT (default: a
# temporary directory, printed).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
old=${1:?usage: sessions-ab.sh OLD NEW [ROUNDS [SESSIONS]]}
new=${2:?usage: sessions-ab.sh OLD NEW [ROUNDS [SESSIONS]]}
rounds=${3:-3}
sessions=${4:-1000}
[ "$rounds" -ge 1 ] && [ "$rounds" -le 10 ] || { echo "sessions-ab: ROUNDS must be 1 to 10" >&2; exit 2; }
[ -n "${MCPRES_POSTGRES_URL:-}" ] || { echo "sessions-ab: start the services first: eval \"\$(scripts/services.sh up)\"" >&2; exit 2; }
out=${AB_OUT:-$(mktemp -d /tmp/sessions-ab.XXXXXX)}
mkdir -p "$out"
: >"$out/runs.txt"

cd "$ROOT"
. scripts/ab.sh
go build -o "$out/mcp-load" ./cmd/mcp-load

one() { # one LABEL BINARY
	local label=$1 bin=$2 f rc
	f="$out/$label-$(date +%H%M%S).txt"
	"$out/mcp-load" --sessions "$sessions" --server "$bin" >"$f" 2>"$f.log" && rc=0 || rc=$?
	# "sessions N: server RSS before A MiB, with the sessions B MiB, peak C MiB, per session D KiB"
	awk -v label="$label" -v rc="$rc" '
		/^sessions [0-9]+: server RSS / { line = $0 }
		END {
			if (line == "") line = "sessions: none measured"
			printf "%-4s exit %s  %s\n", label, rc, line
		}' "$f" | tee -a "$out/runs.txt"
	[ "$rc" = 0 ] || grep -E '^(FAIL|mcp-load:)' "$f" "$f.log" | head -5 >&2 || true
}

echo "sessions-ab: $rounds rounds, $sessions sessions each subscribed to one body; output in $out" >&2
interleave "$rounds"

medians "%.1f" "$out/runs.txt" '
	/ server RSS before / {
		side = $1; n[side]++
		for (i = 1; i < NF; i++) {
			v = $(i + 1)
			if ($i == "before") add(side, "RSS before MiB", v)
			if ($i == "sessions" && $(i - 1) == "the") add(side, "RSS with the sessions MiB", v)
			if ($i == "peak") add(side, "peak RSS MiB", v)
			if ($i == "session" && $(i - 1) == "per") add(side, "per session KiB", v)
		}
	}'
