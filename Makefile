# The README's two commands: `make demo` and `make test`.
GO ?= go

.PHONY: demo test check deps build bench corpus

demo:
	$(GO) run ./cmd/bringup demo

# test installs what the end-to-end tests need (as root, only what is
# missing), then runs every check CI runs. Packages run one at a time: the
# end-to-end ones boot test hosts and measure real timings, and on a
# 2-core machine two of them at once starve each other.
TESTFLAGS ?= -race -count=1 -p 1
test: deps check
	$(GO) test $(TESTFLAGS) ./...

deps:
	bash .ci/deps

check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

build:
	$(GO) build -o bringup ./cmd/bringup

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./remote/... ./ui/...

# corpus lists every real startup log of the corpus with its verdict.
corpus:
	$(GO) test -count=1 -run Corpus -v ./remote/startup
