# syntax=docker/dockerfile:1
# bin/gateway for the scaled-out mode (DOCRENDER_NATS_URL set): no browser
# inside, the gateway never renders. Build from the repository root:
#   docker build -f deploy/gateway.Dockerfile -t docrender/gateway .
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Each module builds on its own (GOWORK=off, local modules by replace in
# go.mod): only gateway and what it replaces are copied.
ENV GOWORK=off
# Module files first: the download layer survives source edits.
COPY gateway/go.mod gateway/go.sum gateway/
COPY worker/go.mod worker/go.sum worker/
COPY pkg/go.mod pkg/go.sum pkg/
COPY proto/go.mod proto/go.sum proto/
RUN --mount=type=cache,target=/root/go/pkg/mod cd gateway && go mod download
COPY gateway/ gateway/
COPY worker/ worker/
COPY pkg/ pkg/
COPY proto/ proto/
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    cd gateway && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/gateway ./cmd/gateway

# Static binary, CA certificates, a non-root user and nothing else.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gateway /usr/local/bin/gateway
ENV DOCRENDER_ADDR=:8080 \
    DOCRENDER_DATA_DIR=/tmp/docrender
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/gateway"]
