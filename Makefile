# The README's two commands: `make demo` and `make test`.
GO ?= go

.PHONY: demo test unit check lint deps build bench corpus soak fleetbench

demo:
	$(GO) run ./cmd/bringup demo

# test installs what the end-to-end tests need (as root, only what is
# missing), then runs every check CI runs: the unit tier and the end-to-end
# tier (BRINGUP_E2E=1, set here: those tests boot test hosts, start sshd,
# drive tmux and run the built binaries, and fail rather than skip when
# something they need is missing). Packages run one at a time: the
# end-to-end ones boot test hosts and measure real timings, and on a
# 2-core machine two of them at once starve each other.
TESTFLAGS ?= -race -count=1 -p 1
test: deps check
	BRINGUP_E2E=1 $(GO) test $(TESTFLAGS) ./...

# unit is the fast tier, what a bare `go test ./...` runs (under a minute
# here): every end-to-end test skips, saying how to run it.
unit:
	BRINGUP_E2E= $(GO) test -count=1 ./...

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

lint:
	$(GOLANGCI_LINT) run ./...

build:
	$(GO) build -o bringup ./cmd/bringup

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

# fleetbench boots FLEETBENCH_HOSTS test hosts (default 64) and measures
# bringup's fleet side by side with plain `ssh host journalctl`: added
# latency while every unit starts, catch-up of a 400 000-line run, time to
# a full table, steady-state CPU and RSS (60 s). It prints a table, writes
# fleetbench.json and takes the hosts down. By hand, as root: not in test.
FLEETBENCH_HOSTS ?= 64
fleetbench: deps
	$(GO) run ./cmd/testbed bench --hosts $(FLEETBENCH_HOSTS) -o fleetbench.json
