#!/usr/bin/env bash
# fuzz.sh runs every fuzz target of the module, one at a time, each for
# FUZZTIME (default 60s), and prints one line a target with its result,
# then a closing count. A target that fails, hangs (the fuzzer's own 10 s
# limit per input) or does not build is a failure; its output is kept under
# $FUZZ_LOG_DIR (default: a temporary directory, printed).
#
#   scripts/fuzz.sh                 every target, 60 s each (about 25 minutes)
#   FUZZTIME=10s scripts/fuzz.sh    shorter
#   scripts/fuzz.sh FuzzParse ...   only the named targets
#
# A new input the fuzzer finds that fails is written by go test under the
# package's testdata/fuzz/: commit it with the fix, as a regression case.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
FUZZTIME=${FUZZTIME:-60s}
logs=${FUZZ_LOG_DIR:-$(mktemp -d)}
mkdir -p "$logs"
mapfile -t targets < <(git grep -n '^func Fuzz' -- '*_test.go' |
	sed -E 's#^(.*)/[^/]*_test\.go:[0-9]+:func (Fuzz[A-Za-z0-9_]*)\(.*#./\1 \2#; s#^[^.].*_test\.go:[0-9]+:func (Fuzz[A-Za-z0-9_]*)\(.*#. \1#')
passed=0 failed=0
for t in "${targets[@]}"; do
	pkg=${t% *} name=${t#* }
	if [ "$#" -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then
		continue
	fi
	start=$SECONDS
	log="$logs/$name.log"
	# Minimizing each new input may take a minute by default, and the
	# fuzzer executes nothing new meanwhile: 5 s leaves the time to fuzzing.
	if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime 5s "$pkg" >"$log" 2>&1; then
		passed=$((passed + 1))
		execs=$(grep -Eo 'execs: [0-9]+' "$log" | tail -1 | awk '{print $2}')
		printf 'ok    %-42s %-34s %4ss  %s execs\n' "$name" "$pkg" "$((SECONDS - start))" "${execs:-?}"
	else
		failed=$((failed + 1))
		printf 'FAIL  %-42s %-34s %4ss  (log: %s)\n' "$name" "$pkg" "$((SECONDS - start))" "$log"
		grep -E -- '--- FAIL|panic:|hang|Failing input|fuzz: elapsed' "$log" | tail -5 | sed 's/^/      /'
	fi
done
echo "fuzz logs: $logs"
echo "fuzz: $passed passed, $failed failed"
[ "$failed" = 0 ]
