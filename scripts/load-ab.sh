#!/usr/bin/env bash
# load-ab.sh runs cmd/mcp-load against two mcp-resources binaries in
# interleaved pairs (A then B, B then A, ...), on this machine's services,
# and prints each run's requests per second, wrong answers and the CPU
# time per request of the server process, of the PostgreSQL cluster
# (all of its processes; the cluster is the throwaway one of
# scripts/services.sh, which nothing else uses during the run) and of the
# load driver itself, which shares the machine's cores with both; the
# server's resident memory (peak: VmHWM, and VmRSS at the last sample,
# after the load, from /proc/PID/status sampled while it runs); and the
# load phase's p50 latency of each kind of request (index, body, object,
# joined, project, list, as cmd/mcp-load prints them). Last, the median
# of each figure over each side's runs, and the ratio new / old.
#
#   scripts/load-ab.sh OLD-BINARY NEW-BINARY [PAIRS [CLIENTS [DURATION]]]
#   scripts/load-ab.sh /tmp/old/mcp-resources .cache/peers/bin/mcp-resources 3 64 15s
#
# Needs the services (eval "$(scripts/services.sh up)") and
# MCPRES_VERSITYGW. Each run's output goes to $AB_OUT (default: a
# temporary directory, printed). The CPU counts warm-up and load requests.
#
# The driver's versitygw keeps connections alive (mcp-load --s3-keep-alive),
# as AWS S3 and MinIO do: as it comes, versitygw closes every connection
# after one response, which makes each S3 GET a TCP connection of its own
# on both sides. AB_S3_KEEPALIVE=0 runs it as it comes.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
old=${1:?usage: load-ab.sh OLD NEW [PAIRS [CLIENTS [DURATION]]]}
new=${2:?usage: load-ab.sh OLD NEW [PAIRS [CLIENTS [DURATION]]]}
keepalive=${AB_S3_KEEPALIVE:-1}
pairs=${3:-3}
clients=${4:-64}
duration=${5:-15s}
[ "$pairs" -ge 1 ] && [ "$pairs" -le 10 ] || { echo "load-ab: PAIRS must be 1 to 10" >&2; exit 2; }
[ -n "${MCPRES_POSTGRES_URL:-}" ] || { echo "load-ab: start the services first: eval \"\$(scripts/services.sh up)\"" >&2; exit 2; }
out=${AB_OUT:-$(mktemp -d /tmp/load-ab.XXXXXX)}
mkdir -p "$out"
: >"$out/runs.txt"
pgroot=$(cat "$ROOT/.services/pgroot")
postmaster=$(head -1 "$pgroot/data/postmaster.pid")

cd "$ROOT"
. scripts/ab.sh
go build -o "$out/mcp-load" ./cmd/mcp-load

# ticks PID: user+system clock ticks of a process; with "tree", of the
# process, its live children and its waited-for children; fails when the
# process is gone.
ticks() {
	local pid=$1 total=0 c
	[ -r "/proc/$pid/stat" ] || return 1
	if [ "${2:-}" = tree ]; then
		total=$(awk '{sub(/.*\) /, ""); print $12+$13+$14+$15}' "/proc/$pid/stat")
		for c in $(pgrep -P "$pid"); do
			total=$((total + $(awk '{sub(/.*\) /, ""); print $12+$13}' "/proc/$c/stat" 2>/dev/null || echo 0)))
		done
		echo "$total"
	else
		awk '{sub(/.*\) /, ""); print $12+$13}' "/proc/$pid/stat"
	fi
}

one() { # one LABEL BINARY
	local label=$1 bin=$2 f pid="" last=0 drvcpu=0 pg0 pg1 drv rc mem="0 0" m
	f="$out/$label-$(date +%H%M%S).txt"
	pg0=$(ticks "$postmaster" tree)
	echo "load $(cut -d' ' -f1-3 /proc/loadavg)" >"$f"
	"$out/mcp-load" --clients "$clients" --duration "$duration" --warmup 3s --server "$bin" --s3-keep-alive="$([ "$keepalive" = 1 ] && echo true || echo false)" >>"$f" 2>&1 &
	drv=$!
	# Sample the server's CPU and memory until it exits (the driver stops it).
	while kill -0 "$drv" 2>/dev/null; do
		[ -n "$pid" ] || pid=$(sed -n 's/^mcp-load: server .*(pid \([0-9]*\),.*/\1/p' "$f")
		# A process may exit between the test and the read: keep the last count.
		if [ -n "$pid" ] && t=$(ticks "$pid" 2>/dev/null); then last=$t; fi
		if [ -n "$pid" ] && m=$(memory "$pid" 2>/dev/null) && [ -n "$m" ]; then mem=$m; fi
		if t=$(ticks "$drv" 2>/dev/null); then drvcpu=$t; fi
		sleep 0.2
	done
	wait "$drv" && rc=0 || rc=$?
	pg1=$(ticks "$postmaster" tree)
	echo "load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$f"
	awk -v label="$label" -v rc="$rc" -v cpu="$last" -v drv="$drvcpu" -v pg=$((pg1 - pg0)) -v mem="$mem" '
		/^phase / { inload = 0 }
		/^phase warm-up/ { warm = $6 }
		/^phase load/ { reqs = $6; rps = $8; inload = 1 }
		# Each kind of the load phase: "    index        188 requests  p50 51.69  p95 ...".
		inload && /^    [a-z-]+ +[0-9]+ requests +p50 / { kinds = kinds " " $1 " " $5 }
		/^  wrong:/ { wrong += $2 }
		/^load / { load = load " " $2 }
		END {
			n = warm + reqs
			split(mem, kb, " ")
			printf "%-4s %8s req/s  wrong %d  exit %s  server CPU/request %.2f ms  PostgreSQL CPU/request %.2f ms  driver CPU/request %.2f ms  server RSS peak %.1f MiB end %.1f MiB  p50 ms%s  load%s\n",
				label, rps, wrong, rc, n ? cpu * 10 / n : 0, n ? pg * 10 / n : 0, n ? drv * 10 / n : 0, kb[1] / 1024, kb[2] / 1024, kinds, load
		}' "$f" | tee -a "$out/runs.txt"
}

# memory PID: the process's VmHWM and VmRSS in kB, from /proc.
memory() {
	awk '/^VmHWM:/ { h = $2 } /^VmRSS:/ { r = $2 } END { if (h != "") print h, r }' "/proc/$1/status"
}

# summary: the median of each figure of runs.txt over each side's runs,
# and the ratio new / old of the medians (ab.sh).
summary() {
	medians "%.2f" "$out/runs.txt" '
		{
			side = $1; n[side]++
			add(side, "req/s", $2)
			for (i = 3; i < NF; i++) {
				if ($i == "CPU/request" && $(i - 1) == "server") add(side, "server CPU/request ms", $(i + 1))
				if ($i == "peak" && $(i - 1) == "RSS") add(side, "server RSS peak MiB", $(i + 1))
				if ($i == "end" && $(i - 3) == "peak") add(side, "server RSS end MiB", $(i + 1))
				if ($i == "ms" && $(i - 1) == "p50") {
					for (j = i + 1; j + 1 <= NF && $j != "load"; j += 2) add(side, "p50 " $j " ms", $(j + 1))
				}
			}
		}'
}

echo "load-ab: $pairs pairs, $clients clients, $duration, S3 keep-alive $([ "$keepalive" = 1 ] && echo on || echo off); output in $out" >&2
interleave "$pairs"
summary
