# browser-agent: the two commands of the quick start are `make demo` and `make test`.
# Both run scripts/setup first, which installs only what is missing.

GO ?= go
# Longer fuzzing: make fuzz FUZZTIME=10m
FUZZTIME ?= 60s

.PHONY: all setup build demo test vet fmt-check unit fuzz bench clean

all: build

setup:
	@scripts/setup

build: setup
	$(GO) build -o bin/browser-agent ./cmd/browser-agent
	$(GO) build -o bin/demo-site ./cmd/demo-site

# The main job: the lookup preset against the embedded demo site, with the offline planner.
demo: build
	bin/browser-agent run --preset lookup --db "$${BROWSER_AGENT_DB:-$(CURDIR)/.state/audit.db}"

# The whole suite: formatting, vet, and every test (the fuzz targets run on their seed corpus).
test: setup fmt-check vet unit

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './driver/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

unit:
	$(GO) test -count=1 ./...

fuzz: setup
	$(GO) test ./policy -run '^$$' -fuzz FuzzDecide -fuzztime $(FUZZTIME)

bench: setup
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin .state tests/out
