# The README's two commands: `make demo` and `make test`.
GO ?= go

# The Go release every make target builds and tests with: the newest patch
# of the go line in go.mod, which the go command fetches from the module
# proxy (go1.26.8, the machines' own, has ten standard-library
# vulnerabilities that govulncheck finds reachable from bringup's code).
export GOTOOLCHAIN ?= go1.26.10

.PHONY: demo test unit check lint vulncheck deps build release-check bench corpus soak fleetbench scale

demo:
	$(GO) run ./cmd/bringup demo

# test installs what the end-to-end tests need (as root, only what is
# missing), then runs every check CI runs: the unit tier and the end-to-end
# tier (BRINGUP_E2E=1, set here: those tests boot test hosts, start sshd,
# drive tmux and run the built binaries, and fail rather than skip when
# something they need is missing). Packages run one at a time: the
# end-to-end ones boot test hosts and measure real timings, and on a
# 2-core machine two of them at once starve each other. cmd/bringup's
# end-to-end tests together take over go test's default 10 minutes a
# package here, hence the timeout.
TESTFLAGS ?= -race -count=1 -p 1 -timeout 30m
test: deps check
	BRINGUP_E2E=1 $(GO) test $(TESTFLAGS) ./...

# unit is the fast tier, what a bare `go test ./...` runs (under a minute
# here): every end-to-end test skips, saying how to run it.
unit:
	BRINGUP_E2E= $(GO) test -count=1 ./...

# The vulnerability database govulncheck reads: golang.org/x/vulndb at this
# date, built by .ci/deps into the user's cache (see there for why).
VULNDB_VERSION = v0.0.0-20261105234957-e22db6528018
export VULNDB_VERSION
export VULNDB_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/bringup/vulndb-$(VULNDB_VERSION)
GOVULNCHECK = $(GO) run golang.org/x/vuln/cmd/govulncheck@v1.9.0

deps:
	bash .ci/deps

# check is gofmt, go vet and golangci-lint with .golangci.yml. The linter
# is built from the module proxy at the pinned version the first time (a
# few minutes on a clean machine; cached by the go command after that).
GOLANGCI_LINT_VERSION = v2.15.0
GOLANGCI_LINT = $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GOLANGCI_LINT) run ./...
	$(GOVULNCHECK) -db file://$(VULNDB_DIR) ./...

lint:
	$(GOLANGCI_LINT) run ./...

# vulncheck is govulncheck on every package, against the database deps built.
vulncheck:
	$(GOVULNCHECK) -db file://$(VULNDB_DIR) ./...

# build makes a static binary (no libc: it runs on any Linux of its
# architecture) carrying the version git describes.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o bringup ./cmd/bringup

# release-check validates .goreleaser.yaml with the pinned goreleaser.
GORELEASER = $(GO) run github.com/goreleaser/goreleaser/v2@v2.15.1
release-check:
	$(GORELEASER) check

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./remote/... ./ui/...

# corpus lists every real startup log of the corpus with its verdict.
corpus:
	$(GO) test -count=1 -run Corpus -v ./remote/startup

# soak follows SOAK_HOSTS flooding test hosts (default 32) for SOAK_MINUTES
# (default 20) under random link cuts and restarts, then checks that no
# line was lost or delivered twice, no journalctl was left behind, and
# goroutines, open files and RSS stayed flat. By hand: it is not in test.
soak: deps
	BRINGUP_E2E=1 BRINGUP_SOAK=1 $(GO) test -count=1 -run '^TestSoak$$' -timeout 90m -v ./remote/live

# ingest-bench times catch-up ingest on a test host (a run of 400 000
# journal lines): raw `ssh host journalctl -o json` against bringup's
# journal follow, three rounds, medians and ratio in the log (about three
# minutes). It takes the machine's end-to-end lock. By hand: not in test.
.PHONY: ingest-bench
ingest-bench: deps
	flock /tmp/bringup-e2e.lock env BRINGUP_E2E=1 BRINGUP_BENCH=1 $(GO) test -count=1 -run '^TestE2EIngest$$' -timeout 20m -v ./remote/journal

# fleetbench boots FLEETBENCH_HOSTS test hosts (default 64) and measures
# bringup's fleet side by side with plain `ssh host journalctl`: added
# latency while every unit starts, catch-up of a 400 000-line run, time to
# a full table, steady-state CPU and RSS (60 s). It prints a table, writes
# fleetbench.json and takes the hosts down. By hand, as root: not in test.
# FLEETBENCH_SOURCE=victorialogs adds the store path on the same hosts in
# the same run (VictoriaLogs fed by each host's systemd-journal-upload).
FLEETBENCH_HOSTS ?= 64
FLEETBENCH_SOURCE ?= ssh
fleetbench: deps
	$(GO) run ./cmd/testbed bench --hosts $(FLEETBENCH_HOSTS) --source $(FLEETBENCH_SOURCE) -o fleetbench.json

# The store path at scale, no host booted and no root: a VictoriaLogs fed N
# hosts' startups replayed from the corpus (a tenth failing), the store
# fleet and the console on it (remote/testkit/scalerig, cmd/testbed scale).
# Not part of `make test`. `make scale N=10000`.
N ?= 1000
SCALE_QUIET ?= 20s
SCALE_WINDOW ?= 60s
scale: deps
	$(GO) run ./cmd/testbed scale --hosts $(N) --quiet $(SCALE_QUIET) --window $(SCALE_WINDOW) -o scale-$(N).json
