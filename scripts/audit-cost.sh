#!/usr/bin/env bash
# audit-cost.sh measures what the audit trail to PostgreSQL costs under
# load: scripts/load-ab.sh runs the same mcp-resources binary in
# interleaved pairs, A without an audit trail and B with
# --audit-postgres on the database it serves (the driver's own, migrated
# with the audit table), --audit-on-failure refuse, and prints each run's
# requests per second and CPU per request.
#
#   scripts/audit-cost.sh [PAIRS [CLIENTS [DURATION]]]
#   scripts/audit-cost.sh 3 64 15s
#
# Needs what load-ab.sh needs: the services (eval "$(scripts/services.sh up)")
# and MCPRES_VERSITYGW.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$(mktemp -d /tmp/audit-cost.XXXXXX)
cd "$ROOT"
go build -o "$dir/mcp-resources" ./cmd/mcp-resources
# B: the same binary, serving with its audit trail in the database that
# --postgres names (every other subcommand as it comes).
cat >"$dir/mcp-resources-audited" <<WRAP
#!/usr/bin/env bash
if [ "\${1:-}" = serve ]; then
	for a in "\$@"; do
		case \$a in --postgres=*) set -- "\$@" "--audit-postgres=\${a#--postgres=}" --audit-on-failure=refuse ;; esac
	done
fi
exec "$dir/mcp-resources" "\$@"
WRAP
chmod +x "$dir/mcp-resources-audited"
echo "audit-cost: A = no audit, B = --audit-postgres (binaries in $dir)"
AB_OUT=${AB_OUT:-$dir/runs} exec scripts/load-ab.sh "$dir/mcp-resources" "$dir/mcp-resources-audited" "${1:-3}" "${2:-64}" "${3:-15s}"
