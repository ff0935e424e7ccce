# kcompatd. Budgets are for a 2-core machine; `make help` lists the targets.

GO       ?= go
BIN      ?= bin/kcompatd
# ARGS are extra flags for `make run`, e.g. ARGS='-c num.partitions=3'.
ARGS     ?=
# FUZZTIME is how long `make fuzz` runs each fuzz target; `make test`
# runs each for 10s.
FUZZTIME ?= 1m
# SOAK_FUZZTIME and SOAK_COUNT size `make soak`.
SOAK_FUZZTIME ?= 10m
SOAK_COUNT    ?= 3
# SOAK_KILLS is TestCrashLoop's kill -9s per flush policy in `make soak`;
# SOAK_LOG keeps that run's verbose output (the numbers are grepped from it).
SOAK_KILLS    ?= 150
SOAK_LOG      ?= /tmp/kcompatd-soak.log

.DEFAULT_GOAL := build
.PHONY: help build run test race vet fuzz integration compat soak bench lint clean

help:
	@echo 'make build        bin/kcompatd'
	@echo 'make run          build and start a broker on localhost:9092, data in /tmp/kcompatd-logs (ARGS=... for more flags)'
	@echo 'make test         go vet, every test with -race (incl. integration/ and the franz-go suite), every fuzz target for 10s'
	@echo 'make race         same as make test'
	@echo 'make integration  only ./integration/... with -race'
	@echo 'make fuzz         every fuzz target for FUZZTIME (default 1m)'
	@echo 'make compat       stock clients of other languages (integration/compat/run.sh)'
	@echo 'make soak         fuzz for SOAK_FUZZTIME each, integration/ SOAK_COUNT times, the kill -9 loop (SOAK_KILLS kills per flush policy), the 50+50-client load test'
	@echo 'make bench        package benchmarks, then the end-to-end benchmark table (BENCH_PEERS=kafka,kfake: against those too; BENCH_ARGS=... for its flags)'
	@echo 'make lint         gofmt and go vet'

build:
	$(GO) build -o $(BIN) ./cmd/kcompatd

run: build
	./$(BIN) $(ARGS)

# Under 30 minutes on 2 cores. The integration tests build the binary
# themselves (with -race) and run franz-go's own suite against it.
test: vet
	$(GO) test -race -count=1 -timeout 25m ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=10s

# pebble calls the race run `testrace`; ours is the default test.
race: test

vet:
	$(GO) vet ./...

# Every fuzz target of every package, found by name, so that a new target
# is fuzzed without editing this file. `go test -fuzz` takes one target of
# one package at a time. Go's fuzzing coordinator can report "context
# deadline exceeded" at the -fuzztime deadline with no failing input (a race
# in internal/fuzz, golang/go#75804, fixed after Go 1.26): a run that fails
# without writing a new input under testdata/fuzz/<target> is run again, at
# most twice; a run that writes one fails at once.
fuzz:
	@set -e; \
	for pkg in $$($(GO) list ./...); do \
		list=$$($(GO) test -list '^Fuzz' $$pkg) || exit 1; \
		dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
		for name in $$(echo "$$list" | grep '^Fuzz' || true); do \
			for try in 1 2 3; do \
				echo "fuzz $$pkg $$name for $(FUZZTIME) (run $$try)"; \
				before=$$(ls "$$dir/testdata/fuzz/$$name" 2>/dev/null | wc -l); \
				if $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; then break; fi; \
				after=$$(ls "$$dir/testdata/fuzz/$$name" 2>/dev/null | wc -l); \
				if [ "$$after" != "$$before" ] || [ $$try = 3 ]; then exit 1; fi; \
				echo "fuzz $$name failed without a failing input (golang/go#75804); running it again"; \
			done; \
		done; \
	done

integration:
	$(GO) test -race -count=1 -timeout 25m ./integration/...

# Needs python3, node/npm and java/mvn; the script installs the pinned
# clients into integration/compat and reports each client.
compat:
	bash integration/compat/run.sh

# Longer fuzzing, then the end-to-end tests several times over to shake
# out flakes and races, then the crash loop and the load test at full size
# (integration/crashloop_test.go, load_test.go), printing their numbers.
soak:
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(SOAK_FUZZTIME)
	$(GO) test -count=1 -timeout 60m -run TestModel ./cleaner -cleaner.workloads=10000
	KCOMPATD_FULL_SWEEP=1 $(GO) test -race -count=$(SOAK_COUNT) -timeout 60m -run 'Fault|Crash' ./internal/vfs/... ./partition ./cleaner
	$(GO) test -race -count=$(SOAK_COUNT) -timeout 120m ./integration/...
	@echo "crash loop ($(SOAK_KILLS) kills per flush policy, -race); log in $(SOAK_LOG)"
	@$(GO) test -race -count=1 -timeout 90m -v -run '^TestCrashLoop$$' ./integration/ \
		-crashloop.kills=$(SOAK_KILLS) -crashloop.time=30m >$(SOAK_LOG) 2>&1 || \
		{ grep -v '"level"' $(SOAK_LOG) | tail -60; exit 1; }
	@grep -E 'crash loop' $(SOAK_LOG)
	@# Without -race: its numbers are the broker's throughput and memory,
	@# and a race-built test process cannot consume 50 clients' worth on 2
	@# cores (make test runs the short form with -race).
	@echo "load test (50 producers, 50 consumers, 1m); log in $(SOAK_LOG).load"
	@$(GO) test -count=1 -timeout 30m -v -run '^TestLoad$$' ./integration/ \
		-load.duration=1m -load.producers=50 -load.consumers=50 >$(SOAK_LOG).load 2>&1 || \
		{ grep -v '"level"' $(SOAK_LOG).load | tail -60; exit 1; }
	@grep -E 'produced [0-9]+ records|group load|consumers:|broker RSS|baseline:|after: ' $(SOAK_LOG).load

bench:
	$(GO) test -run '^$$' -bench . -benchmem . ./recordbatch ./partition ./protocol ./cleaner
	BENCH_PEERS='$(BENCH_PEERS)' BENCH_KAFKA_CLASSPATH='$(BENCH_KAFKA_CLASSPATH)' $(GO) run ./integration/bench $(BENCH_ARGS)

# gofmt has no exit status for "needs formatting"; fail on any listed file.
lint: vet
	@files=$$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*' -not -path '*/node_modules/*' | xargs gofmt -l); \
	if [ -n "$$files" ]; then echo "gofmt needed:"; echo "$$files"; exit 1; fi

clean:
	rm -rf bin
