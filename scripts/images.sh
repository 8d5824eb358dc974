#!/usr/bin/env bash
# images.sh builds, on a machine that reaches Debian's package mirror but no
# image registry, the local images that the testcontainers path and the
# compose quickstart need, from Debian packages and locally built binaries:
#
#   local/debian:bookworm          debootstrap --variant=minbase bookworm, imported
#   local/postgres:15-bookworm     Debian's postgresql-15, with an entrypoint that
#                                  behaves like the official image's for our use
#                                  (POSTGRES_USER/PASSWORD/DB, a superuser with a
#                                  password, `host all all all scram-sha-256`,
#                                  pg_isready, the two "ready to accept
#                                  connections" lines testcontainers waits for)
#   local/minio:<version>          the MinIO server and mc built by scripts/tools.sh
#                                  (AGPL: test services; nothing of them enters
#                                  this module or its image)
#   local/versitygw:v1.8.0         versitygw, laid out like its upstream image
#   local/golang:1.26-bookworm     a build base for the Dockerfile: this machine's
#                                  Go toolchain (go env GOROOT) on local/debian,
#                                  with ca-certificates
#   local/static:bookworm          a runtime base like distroless/static:nonroot:
#                                  CA certificates, tzdata, /etc/passwd with
#                                  nonroot (65532), no shell
#
# Usage:
#   scripts/images.sh            build what is missing or out of date, then
#                                print the variables that point the harness,
#                                the compose file and the Dockerfile at them
#   eval "$(scripts/images.sh)"
#
# The images are never tagged with an upstream name (postgres:..., quay.io/...):
# the upstream names stay the defaults for machines that can pull them. Each
# image carries a label with the hash of its recipe and inputs and is rebuilt
# only when that changes. The debootstrap root file system is cached as a tar
# in MCPRES_CACHE (default /var/cache/mcpres).
#
# It also copies this machine's extra CA certificates (those that
# update-ca-certificates installs from /usr/local/share/ca-certificates) into
# deploy/ca-certificates/, which the Dockerfile's build stage trusts: a Go
# build inside a container that reaches the module proxy through a proxy that
# intercepts TLS needs them.
#
# Messages go to stderr, each build with its time; only `export` lines go to stdout.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${MCPRES_CACHE:-/var/cache/mcpres}
MIRROR=${MCPRES_DEBIAN_MIRROR:-http://deb.debian.org/debian}

BASE=local/debian:bookworm
POSTGRES=local/postgres:15-bookworm
VERSITYGW=local/versitygw:v1.8.0
GOLANG=local/golang:1.26-bookworm
STATIC=local/static:bookworm

# The legacy builder: this docker CLI may have no buildx, and nothing here
# needs BuildKit.
export DOCKER_BUILDKIT=0

say() { printf 'images: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

docker info >/dev/null 2>&1 || die "no Docker engine answers (start dockerd first)"

# label IMAGE: print the recipe hash recorded on IMAGE, if it exists.
label() { docker image inspect -f '{{index .Config.Labels "uk.phpboyscout.mcpres.recipe"}}' "$1" 2>/dev/null || true; }

# build IMAGE CONTEXT HASH: docker build CONTEXT (its Dockerfile inside)
# unless IMAGE already carries HASH.
build() {
	local image=$1 context=$2 hash=$3 t0=$SECONDS
	if [ "$(label "$image")" = "$hash" ]; then
		say "reusing $image"
		return
	fi
	say "building $image"
	docker build --label "uk.phpboyscout.mcpres.recipe=$hash" -t "$image" "$context" >"$context.log" 2>&1 || {
		tail -40 "$context.log" >&2
		die "building $image failed"
	}
	say "built $image in $((SECONDS - t0))s"
}

hash_of() { cat "$@" | sha256sum | cut -c1-16; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- local/debian:bookworm ----------------------------------------------------
rootfs_tar=$CACHE/debian-bookworm-minbase.tar
if [ ! -s "$rootfs_tar" ]; then
	command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
	t0=$SECONDS
	say "debootstrap --variant=minbase bookworm (about 1-2 minutes)"
	mkdir -p "$CACHE"
	rootfs=$CACHE/rootfs.tmp
	rm -rf "$rootfs"
	debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 || {
		tail -20 "$CACHE/debootstrap.log" >&2
		die "debootstrap failed (log: $CACHE/debootstrap.log)"
	}
	rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
	tar --numeric-owner -C "$rootfs" -cf "$rootfs_tar.tmp" .
	mv "$rootfs_tar.tmp" "$rootfs_tar"
	rm -rf "$rootfs"
	say "root file system in $((SECONDS - t0))s: $rootfs_tar"
fi
base_hash=$(hash_of "$rootfs_tar")
if [ "$(label "$BASE")" = "$base_hash" ]; then
	say "reusing $BASE"
else
	say "importing $BASE"
	docker import -c "LABEL uk.phpboyscout.mcpres.recipe=$base_hash" -c 'CMD ["/bin/bash"]' \
		-c 'ENV LANG=C.UTF-8' "$rootfs_tar" "$BASE" >/dev/null
fi

# --- local/postgres:15-bookworm ---------------------------------------------
mkdir -p "$work/postgres"
cat >"$work/postgres/Dockerfile" <<EOF
FROM $BASE
ENV DEBIAN_FRONTEND=noninteractive
# As the official image does: Debian's package must not create a cluster of its own.
RUN apt-get update -q \\
 && apt-get install -y -q --no-install-recommends postgresql-common \\
 && sed -ri 's/#?[[:space:]]*create_main_cluster[[:space:]]*=.*/create_main_cluster = false/' /etc/postgresql-common/createcluster.conf \\
 && apt-get install -y -q --no-install-recommends postgresql-15 \\
 && rm -rf /var/lib/apt/lists/*
ENV PATH=/usr/lib/postgresql/15/bin:\$PATH PGDATA=/var/lib/postgresql/data
RUN mkdir -p "\$PGDATA" /var/run/postgresql && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql && chmod 700 "\$PGDATA"
COPY docker-entrypoint.sh /usr/local/bin/
USER postgres
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
EOF
cat >"$work/postgres/docker-entrypoint.sh" <<'EOF'
#!/bin/bash
# What the official postgres image's entrypoint does, for what our tests and
# compose file use: on first start, initdb with POSTGRES_USER (default
# postgres) as the superuser with POSTGRES_PASSWORD, create POSTGRES_DB,
# listen on all addresses with scram-sha-256 for every host, then run the
# server in the foreground with the given arguments.
set -euo pipefail
if [ "${1:0:1}" = '-' ]; then set -- postgres "$@"; fi
if [ "$1" != postgres ]; then exec "$@"; fi
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "${POSTGRES_PASSWORD:-}" ]; then
		echo 'error: POSTGRES_PASSWORD must be set (a superuser with no password is not served)' >&2
		exit 1
	fi
	pwfile=$(mktemp)
	printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
	initdb -D "$PGDATA" --username="$POSTGRES_USER" --pwfile="$pwfile" -E UTF8 --auth-local=trust --auth-host=scram-sha-256
	rm -f "$pwfile"
	printf '\nhost all all all scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
	pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start
	if [ "$POSTGRES_DB" != postgres ]; then
		psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
			-c "CREATE DATABASE \"$POSTGRES_DB\""
	fi
	pg_ctl -D "$PGDATA" -m fast -w stop
	echo 'PostgreSQL init process complete; ready for start up.'
fi
exec "$@" -c listen_addresses='*'
EOF
chmod +x "$work/postgres/docker-entrypoint.sh"
build "$POSTGRES" "$work/postgres" "$(hash_of "$work/postgres/Dockerfile" "$work/postgres/docker-entrypoint.sh" <(echo "$base_hash"))"

# --- local/minio:<version> and local/versitygw:v1.8.0 -----------------------
mapfile -t tools < <("$ROOT/scripts/tools.sh" minio mc versitygw)
for kv in "${tools[@]}"; do declare "tool_${kv%%=*}=${kv#*=}"; done
# shellcheck disable=SC2154 # set by declare above
minio_version=$(go version -m "$tool_minio" | awk '$1 == "mod" { print $3 }')
MINIO=local/minio:${minio_version##*-}

mkdir -p "$work/minio"
cp "$tool_minio" "$work/minio/minio"
cp "$tool_mc" "$work/minio/mc"
cat >"$work/minio/Dockerfile" <<EOF
FROM $BASE
# The MinIO server ($minio_version) and mc, built from their published Go
# modules by scripts/tools.sh: a test service, laid out as the upstream image
# is (minio and mc on PATH, data in /data, the API on 9000).
COPY minio mc /usr/bin/
ENV MINIO_ROOT_USER=minioadmin MINIO_ROOT_PASSWORD=minioadmin
EXPOSE 9000
VOLUME ["/data"]
ENTRYPOINT ["minio"]
CMD ["server", "/data"]
EOF
build "$MINIO" "$work/minio" "$(hash_of "$work/minio/Dockerfile" "$work/minio/minio" "$work/minio/mc" <(echo "$base_hash"))"

mkdir -p "$work/versitygw"
cp "$tool_versitygw" "$work/versitygw/versitygw"
cat >"$work/versitygw/Dockerfile" <<EOF
FROM $BASE
# versitygw v1.8.0, built by scripts/tools.sh, where its upstream image has it.
COPY versitygw /app/versitygw
RUN mkdir -p /tmp/vgw
ENTRYPOINT ["/app/versitygw"]
EOF
build "$VERSITYGW" "$work/versitygw" "$(hash_of "$work/versitygw/Dockerfile" "$work/versitygw/versitygw" <(echo "$base_hash"))"

# --- build and runtime bases for the project's Dockerfile -------------------
goroot=$(go env GOROOT)
goversion=$(go env GOVERSION)
case $goversion in go1.26*) ;; *) die "the Dockerfile builds with Go 1.26; this machine has $goversion" ;; esac
mkdir -p "$work/golang"
tar -C "$goroot" --exclude=./pkg/obj --exclude=./test -cf "$work/golang/go.tar" .
cat >"$work/golang/Dockerfile" <<EOF
FROM $BASE
# A stand-in for golang:1.26-bookworm: this machine's $goversion toolchain on
# Debian, with ca-certificates (update-ca-certificates) as the official image has.
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q && apt-get install -y -q --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
ADD go.tar /usr/local/go/
ENV GOLANG_VERSION=${goversion#go} GOTOOLCHAIN=local GOPATH=/go PATH=/go/bin:/usr/local/go/bin:\$PATH
WORKDIR /go
EOF
build "$GOLANG" "$work/golang" "$(hash_of "$work/golang/Dockerfile" <(echo "$base_hash" "$goroot" "$goversion"))"

mkdir -p "$work/static"
cat >"$work/static/Dockerfile" <<EOF
FROM $BASE AS files
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q && apt-get install -y -q --no-install-recommends ca-certificates tzdata && rm -rf /var/lib/apt/lists/*
RUN mkdir -p /out/etc/ssl/certs /out/usr/share /out/tmp /out/home/nonroot \\
 && cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/ \\
 && cp -r /usr/share/zoneinfo /out/usr/share/ \\
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >/out/etc/passwd \\
 && printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >/out/etc/group \\
 && chmod 1777 /out/tmp && chown 65532:65532 /out/home/nonroot

# A stand-in for gcr.io/distroless/static-debian12:nonroot: no shell, no
# package manager; CA certificates, tzdata and the nonroot user.
FROM scratch
COPY --from=files /out/ /
USER 65532:65532
WORKDIR /home/nonroot
EOF
build "$STATIC" "$work/static" "$(hash_of "$work/static/Dockerfile" <(echo "$base_hash"))"

# --- the build machine's CA certificates, for the Dockerfile -----------------
cas=$ROOT/deploy/ca-certificates
shopt -s nullglob
extra=(/usr/local/share/ca-certificates/*.crt /usr/local/share/ca-certificates/*/*.crt)
shopt -u nullglob
if [ "${#extra[@]}" -gt 0 ]; then
	cp "${extra[@]}" "$cas/"
	say "copied ${#extra[@]} CA certificate(s) from /usr/local/share/ca-certificates into deploy/ca-certificates/"
fi

cat <<EOF
export MCPRES_POSTGRES_IMAGE=$POSTGRES
export MCPRES_MINIO_IMAGE=$MINIO
export MCPRES_MC_IMAGE=$MINIO
export MCPRES_VERSITYGW_IMAGE=$VERSITYGW
export MCPRES_BUILD_IMAGE=$GOLANG
export MCPRES_RUNTIME_IMAGE=$STATIC
EOF
