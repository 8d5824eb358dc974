# The reference server, cmd/mcp-resources, as a small non-root image:
#
#   docker build -t mcp-resources .
#   docker run --rm -p 127.0.0.1:8080:8080 mcp-resources       # embedded demo over HTTP
#   docker run --rm -i mcp-resources serve                     # embedded demo over stdio
#
# The default command serves streamable HTTP on 0.0.0.0:8080 (MCP at /mcp,
# /healthz, /readyz and /metrics beside it). Configure it with flags or the
# MCPRES_* variables that `mcp-resources --help` lists; docker-compose.yml
# wires it to PostgreSQL and MinIO with one-shot migrate and seed services.

# Build: a static binary (no cgo), without local paths or debug information.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/mcp-resources ./cmd/mcp-resources

# Run: distroless static (CA certificates and tzdata, no shell), as the
# image's non-root user (uid 65532).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/mcp-resources /usr/local/bin/mcp-resources
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/mcp-resources"]
CMD ["serve", "--http", "0.0.0.0:8080"]
