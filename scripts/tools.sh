#!/usr/bin/env bash
# tools.sh builds, once, the third-party programs that the tests run as
# separate processes, and reuses them afterwards. None of them is linked
# into, vendored in, copied into or shipped with this module or its image.
#
#   versitygw       S3 server (Apache-2.0), native integration runs     ~3 min
#   minio           S3 server (AGPL-3.0): a test service only           ~11 min
#   mc              MinIO's client (AGPL-3.0): the MinIO image's
#                   health check and the quickstart's bucket setup      ~3 min after minio
#   hydra           Ory Hydra (Apache-2.0), the OAuth 2.1 authorization
#                   server of the identity tests                       ~2 min
#   docker-compose  Compose v2, installed as the docker CLI plugin      ~12 min
#   helm            Helm v3 (Apache-2.0): lints and renders deploy/helm ~5 min
#
# Usage:
#   scripts/tools.sh NAME...   build what is missing, print NAME=PATH lines
#
# Binaries go to MCPRES_TOOLS_DIR (default: $(go env GOPATH)/bin, where
# `go install` puts versitygw anyway), outside the checkout, so every later
# run on the machine reuses them. A binary is reused only when its build
# information names the pinned version. Builds run one after the other,
# niced, never in parallel: the machine's two cores are shared.
#
# Messages go to stderr with each build's time; only NAME=PATH goes to stdout.
set -euo pipefail

VERSITYGW_VERSION=v1.8.0
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
# The mc that this MinIO server's own go.mod requires: its dependencies are
# then mostly already downloaded and compiled.
MC_VERSION=v0.0.0-20250313080218-cf909e1063a9
HYDRA_VERSION=v2.3.0
# Hydra's own go.mod replaces pop with Ory's fork; a replace applies only in
# the main module, so the tool module below repeats it.
HYDRA_POP_REPLACE=github.com/gobuffalo/pop/v6=github.com/ory/pop/v6@v6.2.1-0.20241121111754-e5dfc0f3344b
COMPOSE_VERSION=v2.40.3
HELM_VERSION=v3.22.0

DIR=${MCPRES_TOOLS_DIR:-$(go env GOPATH)/bin}
PLUGIN_DIR=${MCPRES_DOCKER_PLUGIN_DIR:-/usr/local/lib/docker/cli-plugins}

say() { printf 'tools: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# pinned BIN MODULE VERSION: true when BIN exists and was built from MODULE@VERSION.
pinned() {
	[ -x "$1" ] && go version -m "$1" 2>/dev/null |
		grep -Eq "^[[:space:]]+(mod|path)[[:space:]]+$2[[:space:]]+$3([[:space:]]|$)"
}

# timed LABEL CMD...: run CMD niced, report how long it took.
timed() {
	local label=$1 t0=$SECONDS
	shift
	say "building $label"
	nice -n 10 "$@" >&2
	say "built $label in $((SECONDS - t0))s"
}

go_install() { # NAME MODULE/PATH MODULE VERSION
	local name=$1 pkg=$2 mod=$3 version=$4
	if pinned "$DIR/$name" "$mod" "$version"; then
		say "reusing $name $version at $DIR/$name"
	else
		mkdir -p "$DIR"
		timed "$name $version into $DIR" env GOBIN="$DIR" go install "$pkg@$version"
	fi
	echo "$name=$DIR/$name"
}

# Hydra refuses `go install` (its go.mod has replace directives), so build it
# as a tool of a small throwaway module (in a temporary directory, never in
# the checkout) that repeats Hydra's replace.
hydra() {
	local bin=$DIR/hydra mod=github.com/ory/hydra/v2 work
	if pinned "$bin" "$mod" "$HYDRA_VERSION"; then
		say "reusing hydra $HYDRA_VERSION at $bin"
	else
		work=$(mktemp -d)
		mkdir -p "$DIR"
		timed "hydra $HYDRA_VERSION into $DIR" sh -c "cd '$work' && go mod init mcpres-tools/hydra &&
			go get -tool '$mod@$HYDRA_VERSION' &&
			go mod edit -replace '$HYDRA_POP_REPLACE' &&
			go mod tidy && go build -trimpath -o '$bin.tmp' '$mod'"
		rm -rf "$work"
		mv "$bin.tmp" "$bin"
	fi
	echo "hydra=$bin"
}

# Compose v2 refuses `go install` (its go.mod has exclude directives), so
# build it inside a copy of its module source, as its own main module.
compose() {
	local bin=$DIR/docker-compose mod=github.com/docker/compose/v2
	# Built as its own main module, the binary's build information says
	# "(devel)"; the version stamp below is what tells the pinned build.
	if [ -x "$bin" ] && "$bin" version 2>/dev/null | grep -q "$COMPOSE_VERSION"; then
		say "reusing docker-compose $COMPOSE_VERSION at $bin"
	else
		local src work
		src=$(go mod download -json "$mod@$COMPOSE_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		[ -n "$src" ] && [ -d "$src" ] || die "could not download $mod@$COMPOSE_VERSION"
		work=$(mktemp -d)
		cp -r "$src/." "$work/"
		chmod -R u+w "$work"
		mkdir -p "$DIR"
		# The build that the module's own Makefile runs (go build ./cmd),
		# with its version stamp.
		timed "docker-compose $COMPOSE_VERSION into $DIR" \
			sh -c "cd '$work' && CGO_ENABLED=0 go build -trimpath \
				-ldflags '-s -w -X $mod/internal.Version=$COMPOSE_VERSION' -o '$bin.tmp' ./cmd"
		rm -rf "$work"
		mv "$bin.tmp" "$bin"
		"$bin" version 2>/dev/null | grep -q "$COMPOSE_VERSION" || die "the built docker-compose does not report $COMPOSE_VERSION"
	fi
	# The docker CLI finds plugins here; a symlink keeps the one binary.
	if mkdir -p "$PLUGIN_DIR" 2>/dev/null && ln -sf "$bin" "$PLUGIN_DIR/docker-compose" 2>/dev/null; then
		say "docker compose: $PLUGIN_DIR/docker-compose -> $bin"
	else
		say "could not link $PLUGIN_DIR/docker-compose; run $bin directly"
	fi
	echo "docker-compose=$bin"
}

[ "$#" -gt 0 ] || die "usage: scripts/tools.sh versitygw|minio|mc|docker-compose|helm..."
for tool in "$@"; do
	case $tool in
	hydra) hydra ;;
	versitygw) go_install versitygw github.com/versity/versitygw/cmd/versitygw github.com/versity/versitygw "$VERSITYGW_VERSION" ;;
	minio) go_install minio github.com/minio/minio github.com/minio/minio "$MINIO_VERSION" ;;
	mc) go_install mc github.com/minio/mc github.com/minio/mc "$MC_VERSION" ;;
	docker-compose) compose ;;
	helm) go_install helm helm.sh/helm/v3/cmd/helm helm.sh/helm/v3 "$HELM_VERSION" ;;
	*) die "unknown tool $tool" ;;
	esac
done
