#!/usr/bin/env bash
# exported.sh: counts the exported API of Go packages, per package: the
# top-level exported names (types, funcs, consts, vars, each name of a
# grouped declaration counted once) and the exported methods and fields of
# exported types are reported apart, from `go doc -all`.
#
#   scripts/exported.sh [PACKAGE...]   (default: ./core)
#
# Output: one line per package, "PKG top=N methods=M fields=F total=N+M".
# Run it in a checkout to compare before and after a change; LIST=1 also
# prints every name counted.
set -euo pipefail
[ $# -gt 0 ] || set -- ./core
for pkg in "$@"; do
	go doc -all "$pkg" | awk -v pkg="$pkg" -v list="${LIST:-}" '
		# Grouped declarations: const ( ... ) and var ( ... ) blocks at column 0.
		/^(const|var) \($/ { block = 1; next }
		block && /^\)/ { block = 0; next }
		block {
			if ($0 ~ /^\t[A-Z][A-Za-z0-9_]*/) { n = $0; sub(/^\t/, "", n); sub(/[^A-Za-z0-9_].*/, "", n); top[n] = 1 }
			next
		}
		/^(const|var) [A-Z]/ { n = $2; sub(/[^A-Za-z0-9_].*/, "", n); top[n] = 1; next }
		/^func [A-Z]/ { n = $2; sub(/[^A-Za-z0-9_].*/, "", n); top[n] = 1; next }
		/^func \(/ {
			# func (r *T) Name(...): a method of exported type T.
			line = $0; sub(/^func \([^)]*\) /, "", line); n = line; sub(/[^A-Za-z0-9_].*/, "", n)
			recv = $0; sub(/^func \([^ ]* \*?/, "", recv); sub(/[^A-Za-z0-9_].*/, "", recv)
			if (n ~ /^[A-Z]/ && recv ~ /^[A-Z]/) meth[recv "." n] = 1
			next
		}
		/^type [A-Z][A-Za-z0-9_]* struct \{$/ { st = $2; top[st] = 1; instruct = 1; depth = 1; next }
		instruct {
			o = gsub(/\{/, "{"); c = gsub(/\}/, "}"); 
			if (depth == 1 && $0 ~ /^\t[A-Z][A-Za-z0-9_]*[ ,]/) {
				# One line may declare several fields: A, B string.
				l = $0; sub(/^\t/, "", l); sub(/\t.*/, "", l); sub(/ [^,]*$/, "", l)
				k = split(l, fs, /, */); for (i = 1; i <= k; i++) if (fs[i] ~ /^[A-Z]/) field[st "." fs[i]] = 1
			}
			depth += o - c
			if (depth <= 0) instruct = 0
			next
		}
		/^type [A-Z]/ { n = $2; sub(/[^A-Za-z0-9_].*/, "", n); top[n] = 1; next }
		END {
			if (list) { for (k in top) print "top " k; for (k in meth) print "method " k }
			t = 0; for (k in top) t++
			m = 0; for (k in meth) m++
			f = 0; for (k in field) f++
			printf "%s top=%d methods=%d fields=%d total=%d\n", pkg, t, m, f, t + m
		}'
done
