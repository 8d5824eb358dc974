# The reference server, cmd/mcp-resources, as a small non-root image:
#
#   docker build -t mcp-resources .
#   docker run --rm -p 127.0.0.1:8080:8080 -e MCPRES_ANONYMOUS=true mcp-resources  # embedded demo over HTTP
#   docker run --rm -i mcp-resources serve                     # embedded demo over stdio
#
# The default command serves streamable HTTP on 0.0.0.0:8080 (MCP at /mcp,
# /healthz, /readyz and /metrics beside it), and refuses to start without
# authentication (MCPRES_TOKENS_FILE or an OAuth issuer) unless
# MCPRES_ANONYMOUS=true asks to serve every client as one principal (a
# WARN line says so). Configure it with flags or the
# MCPRES_* variables that `mcp-resources --help` lists; docker-compose.yml
# wires it to PostgreSQL and MinIO with one-shot migrate and seed services.

# The base images are arguments, so the same static binary builds from the
# upstream images (the defaults, for a machine that reaches their registries)
# or from local stand-ins (scripts/images.sh builds local/golang:1.26-bookworm
# and local/static:bookworm from Debian packages where no registry answers):
#
#   docker build --build-arg BUILD_IMAGE=local/golang:1.26-bookworm \
#                --build-arg RUNTIME_IMAGE=local/static:bookworm -t mcp-resources .
#
# Both bases must provide what the stages below use: the build base Go 1.26
# with update-ca-certificates (Debian's ca-certificates), the runtime base a
# nonroot user (uid 65532) and CA certificates.
ARG BUILD_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

# Build: a static binary (no cgo), without local paths or debug information.
# deploy/ca-certificates/*.crt are trusted first: where a proxy intercepts
# TLS, the module downloads below need the build machine's CA (copy it there;
# scripts/images.sh does). The runtime image gets none of them.
FROM ${BUILD_IMAGE} AS build
COPY deploy/ca-certificates/ /usr/local/share/ca-certificates/mcpres-build/
RUN update-ca-certificates >/dev/null
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/mcp-resources ./cmd/mcp-resources

# Run: distroless static (CA certificates and tzdata, no shell), as the
# image's non-root user (uid 65532).
FROM ${RUNTIME_IMAGE}
# The MCP registry checks that an OCI package's image names the server.json
# entry it belongs to (server.json's "name"; TestServerJSON keeps them equal).
LABEL io.modelcontextprotocol.server.name="uk.phpboyscout/mcp-resources"
COPY --from=build /out/mcp-resources /usr/local/bin/mcp-resources
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/mcp-resources"]
CMD ["serve", "--http", "0.0.0.0:8080"]
