#!/usr/bin/env bash
# stress.sh runs the unit and integration suites ROUNDS times under -race
# with HOGS busy loops beside them (so the tests meet the busy machine a
# fresh CI run can be), against the native services, and prints each test
# that failed with how many rounds it failed in. Everything it starts is
# bounded in time and stopped when it ends.
#
#   scripts/stress.sh                       5 rounds, 2 hogs, every package
#   scripts/stress.sh -n 10 -j 2 -r 'TestConfigSubscriptions' ./integration/
#                                           one test, 10 rounds
#
# Options:
#   -n ROUNDS   rounds (default 5)
#   -j HOGS     CPU hogs beside the tests (default 2)
#   -r REGEXP   go test -run filter (default: every test)
#   -l LIMIT    time limit of the whole run, hogs included (default 3h)
#   PACKAGES    go packages (default ./...)
#
# Services: when MCPRES_POSTGRES_URL is unset it starts them with
# scripts/services.sh (MinIO too, when built) and stops them at the end.
# MCPRES_INTEGRATION=require: an integration test that would skip fails.
# Exit status: 0 when every round passed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=5 hogs=2 run="" limit=3h
while getopts 'n:j:r:l:' o; do
	case $o in
	n) rounds=$OPTARG ;;
	j) hogs=$OPTARG ;;
	r) run=$OPTARG ;;
	l) limit=$OPTARG ;;
	*) sed -n '2,24p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
pkgs=("$@")
[ "${#pkgs[@]}" -gt 0 ] || pkgs=(./...)

work=$(mktemp -d)
started_services=0
hog_pids=()
cleanup() {
	for p in "${hog_pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ "$started_services" = 0 ] || scripts/services.sh down >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "${MCPRES_POSTGRES_URL:-}" ]; then
	scripts/services.sh up >/dev/null || exit 1
	started_services=1
	eval "$(scripts/services.sh env)"
fi
export MCPRES_INTEGRATION=require
case $limit in
*h) limit_s=$((${limit%h} * 3600)) ;; *m) limit_s=$((${limit%m} * 60)) ;; *s) limit_s=${limit%s} ;; *) limit_s=$limit ;;
esac
deadline=$(($(date +%s) + limit_s))

for _ in $(seq 1 "$hogs"); do
	timeout "$limit" sh -c 'while :; do :; done' &
	hog_pids+=($!)
done
echo "stress: $rounds rounds of go test -race ${run:+-run '$run' }${pkgs[*]} beside $hogs CPU hogs ($(nproc) cores)"

args=(-race -count=1 -json -timeout 30m)
[ -z "$run" ] || args+=(-run "$run")
failed_rounds=0
for r in $(seq 1 "$rounds"); do
	if [ "$(date +%s)" -ge "$deadline" ]; then
		echo "stress: the time limit ($limit) ended the run before round $r"
		break
	fi
	t0=$SECONDS
	GORACE="${GORACE:-} atexit_sleep_ms=0" timeout "$limit" go test "${args[@]}" "${pkgs[@]}" >"$work/round$r.json" 2>"$work/round$r.err"
	status=$?
	# One line per failed test (subtests included) and per failed package
	# without a failed test (a build failure, a panic outside a test).
	grep '"Action":"fail"' "$work/round$r.json" |
		sed -E 's/.*"Package":"([^"]*)"(,"Test":"([^"]*)")?.*/\3 \1/; s/^ /(package) /' |
		sort -u >"$work/fail$r"
	passed=$(grep -c '"Action":"pass","Package":"[^"]*","Test"' "$work/round$r.json")
	skipped=$(grep -c '"Action":"skip","Package":"[^"]*","Test"' "$work/round$r.json")
	nfail=$(grep -vc '^(package)' "$work/fail$r")
	if [ "$status" != 0 ] && [ ! -s "$work/fail$r" ]; then
		echo "(run) go-test-exit-$status" >"$work/fail$r"
		tail -5 "$work/round$r.err" | sed 's/^/    /'
	fi
	grep -E '"Action":"skip","Package":"[^"]*","Test"' "$work/round$r.json" |
		sed -E 's/.*"Package":"([^"]*)","Test":"([^"]*)".*/\2 \1/' >>"$work/skips"
	[ ! -s "$work/fail$r" ] || failed_rounds=$((failed_rounds + 1))
	pkgfail=$(grep -c '^(package)' "$work/fail$r")
	printf 'round %d: %d passed, %d failed, %d skipped, %d packages failed in %ds (load %s)\n' "$r" "$passed" "$nfail" "$skipped" "$pkgfail" "$((SECONDS - t0))" "$(cut -d' ' -f1 /proc/loadavg)"
	# A package that failed without a failed test (a panic, a timeout, a
	# test binary killed by a signal) shows the test that was running.
	if [ "$pkgfail" != 0 ]; then
		grep -E '"Action":"(run|output)"' "$work/round$r.json" | grep -E 'SIGQUIT|panic: |test timed out|=== RUN' |
			sed -E 's/.*"Package":"([^"]*)".*"Output":"([^"]*)".*/    \1: \2/; s/\\n$//' | grep -B1 -E 'SIGQUIT|panic|timed out' | head -6
	fi
done

echo
if [ -s "$work/skips" ]; then
	echo "stress: tests that skipped themselves (rounds, test, package)"
	sort "$work/skips" | uniq -c | awk '{printf "  %d  %s  %s\n", $1, $2, $3}'
fi
if [ "$failed_rounds" = 0 ]; then
	echo "stress: no test failed in any round"
else
	echo "stress: failures (rounds failed / rounds run, test, package)"
	cat "$work"/fail* | sort | uniq -c | sort -rn | awk -v n="$rounds" '{printf "  %d/%d  %s  %s\n", $1, n, $2, $3}'
fi
echo "stress: $((rounds - failed_rounds)) passed, $failed_rounds failed"
[ "$failed_rounds" = 0 ]
