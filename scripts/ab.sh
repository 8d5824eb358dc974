# ab.sh is sourced by the scripts that run two mcp-resources binaries in
# turns (load-ab.sh, sessions-ab.sh): the order of their runs and the
# table of medians they end with. It expects a function one LABEL BINARY
# and the variables old and new, the two binaries.

# interleave N runs N pairs, each binary first in every other pair (old,
# new; new, old; ...), so that neither side always runs on a machine the
# other has just warmed or loaded.
interleave() {
	local i
	for i in $(seq 1 "$1"); do
		if [ $((i % 2)) = 1 ]; then
			one old "$old"
			one new "$new"
		else
			one new "$new"
			one old "$old"
		fi
	done
}

# medians FORMAT FILE PROGRAM prints, for each figure that PROGRAM (awk
# rules, given each line of FILE) records with add(side, name, value),
# the median of each side's values and the ratio new / old of the medians;
# each median is printed with FORMAT (a printf format, "%.2f").
medians() {
	awk -v fmt="$1" -f <(printf '%s\n' "$3" '
		function add(side, name, v) {
			if (!(name in seen)) { seen[name] = 1; names[++k] = name }
			c = ++count[side, name]; val[side, name, c] = v + 0
		}
		function median(side, name,   m, i, j, t, a) {
			m = count[side, name]
			if (!m) return ""
			for (i = 1; i <= m; i++) a[i] = val[side, name, i]
			for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
		}
		END {
			printf "medians of %d old and %d new runs:\n", n["old"], n["new"]
			printf "  %-26s %10s %10s %9s\n", "", "old", "new", "new/old"
			for (i = 1; i <= k; i++) {
				o = median("old", names[i]); w = median("new", names[i])
				r = (o != "" && w != "" && o > 0) ? sprintf("%.2fx", w / o) : ""
				printf "  %-26s %10s %10s %9s\n", names[i], o == "" ? "" : sprintf(fmt, o), w == "" ? "" : sprintf(fmt, w), r
			}
		}') "$2"
}
