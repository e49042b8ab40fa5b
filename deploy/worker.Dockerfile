# syntax=docker/dockerfile:1
# bin/worker: Chromium, LibreOffice, the fonts documents expect, and the
# worker binary. Which of its engines a worker uses is DOCRENDER_WORKER_KINDS.
# Build from the repository root:
#   docker build -f deploy/worker.Dockerfile -t docrender/worker .
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Each module builds on its own (GOWORK=off, local modules by replace in
# go.mod): only worker and what it replaces are copied.
ENV GOWORK=off
# Module files first: the download layer survives source edits.
COPY worker/go.mod worker/go.sum worker/
COPY pkg/go.mod pkg/go.sum pkg/
COPY proto/go.mod proto/go.sum proto/
RUN --mount=type=cache,target=/root/go/pkg/mod cd worker && go mod download
COPY worker/ worker/
COPY pkg/ pkg/
COPY proto/ proto/
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    cd worker && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/worker ./cmd/worker

FROM debian:bookworm-slim
# The same browser, LibreOffice and fonts as scripts/setup: Latin
# metric-compatible fonts (Arial/Times/Courier; Carlito and Caladea for
# Calibri and Cambria, so a docx keeps its line breaks), Noto for other
# scripts, CJK and colour emoji. LibreOffice without its GUI or Java (no
# format we take needs it), driven over UNO by python3-uno; util-linux's
# unshare gives each slot a network namespace where user namespaces are
# allowed. poppler-utils' pdftotext reads /pdf/text's plain text (PDFium,
# in the worker, reads the rest). tini reaps Chromium's and LibreOffice's child processes (the
# worker is not an init).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      chromium fonts-liberation2 fonts-noto-core fonts-noto-cjk fonts-noto-color-emoji \
      libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui python3-uno \
      fonts-crosextra-carlito fonts-crosextra-caladea util-linux poppler-utils \
      ca-certificates tini \
 && rm -rf /var/lib/apt/lists/*
# Not root (as root the worker would start Chromium as
# DOCRENDER_CHROMIUM_USER, as Chromium refuses its sandbox to root). The
# sandbox needs unprivileged user namespaces, which the default seccomp
# profiles of Docker and containerd refuse: see deploy/README.md.
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/docrender docrender
COPY --from=build /out/worker /usr/local/bin/worker
ENV DOCRENDER_CHROMIUM_PATH=/usr/bin/chromium \
    DOCRENDER_OFFICE_PATH=/usr/bin/soffice \
    DOCRENDER_WORKER_ADDR=:9090 \
    DOCRENDER_DATA_DIR=/tmp/docrender
USER 10001:10001
WORKDIR /home/docrender
# /healthz, /readyz and /metrics
EXPOSE 9090
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/worker"]
