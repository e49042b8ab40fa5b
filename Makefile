# docrender: see README.md. Targets are a stable interface (DESIGN §1).
SHELL := /bin/bash
CACHE ?= $(HOME)/.cache/docrender
export PATH := $(CACHE)/bin:$(PATH)
MODULES := ./pkg/... ./proto/... ./worker/... ./gateway/... ./e2e/... ./bench/... ./client/... ./cli/...
# Each module builds on its own too (GOWORK=off), as a user of one would.
MODULE_DIRS := proto pkg worker gateway e2e bench client cli
# deploy/validate is a module of its own outside go.work (its tools stay out
# of the service's dependencies): run it with GOWORK=off from its folder.
DEPLOY := cd deploy/validate && GOWORK=off

.PHONY: build run test lint bench soak fuzz proto setup clean

build:
	go build -o bin/gateway ./gateway/cmd/gateway
	go build -o bin/worker ./worker/cmd/worker
	go build -o bin/docrender ./cli/cmd/docrender

setup:
	scripts/setup

run: setup build
	bin/gateway

lint:
	@test -z "$$(gofmt -l $(MODULE_DIRS))" || { gofmt -l $(MODULE_DIRS); echo "gofmt needed"; exit 1; }
	go vet $(MODULES)
	staticcheck $(MODULES)
	@set -e; for m in $(MODULE_DIRS); do echo "GOWORK=off: $$m"; (cd $$m && GOWORK=off go build ./... && GOWORK=off go vet ./...); done
	@test -z "$$(gofmt -l deploy/validate)" || { gofmt -l deploy/validate; echo "gofmt needed"; exit 1; }
	$(DEPLOY) go vet ./...
	$(DEPLOY) staticcheck ./...

test:
	scripts/setup --test
	$(MAKE) lint
	go test -count=1 -timeout 18m -p 2 $(MODULES)
	$(DEPLOY) go test -count=1 ./...

bench: setup build
	scripts/bench

soak: setup build
	scripts/soak

# Every hostile-input fuzz target for FUZZTIME each (their seed corpora run
# in make test as plain tests). One target per go test -fuzz call.
FUZZTIME ?= 60s
FUZZ_TARGETS := pkg/pdfopts:FuzzParseJSON pkg/limits:FuzzImage pkg/qr:FuzzRequest pkg/tmpl:FuzzRender \
	worker/pdfedit:FuzzMerge worker/pdfedit:FuzzInspect worker/pdfedit:FuzzWatermarkImage worker/pdfedit:FuzzPageCount worker/pdfedit:FuzzLazySplit worker/pdfium:FuzzText worker:FuzzTextTool worker/pdfcheck:FuzzCheck worker/sign:FuzzRead \
	gateway/server:FuzzMultipart
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} in ./$${t%%:*} for $(FUZZTIME)"; \
		go test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) ./$${t%%:*}; \
	done

proto:
	@command -v protoc >/dev/null || { SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO=sudo; $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq protobuf-compiler; }
	GOBIN=$(CACHE)/bin go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	protoc -I proto --go_out=proto/jobspb --go_opt=paths=source_relative proto/jobs.proto

clean:
	rm -rf bin data
