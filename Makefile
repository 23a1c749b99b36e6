# evalsched — the front door. `make run` shows the scheduler against the old
# world in the simulator; `make test` is what CI runs.

GO       ?= go
PKGS     := ./...
SCENARIO ?= scenarios/seed-hot-lanes.json
REPORT   ?= out/report.html

.PHONY: run test lint bench fuzz build clean local

run: ## simulate seed-hot-lanes under all three policies, print the table, write the report
	@mkdir -p $(dir $(REPORT))
	$(GO) run ./cmd/evalsched sim --scenario $(SCENARIO) --policy all --report $(REPORT)

node_modules: package.json package-lock.json ## the local AWS stand-ins the adapter tests run (docs/local-aws.md)
	npm ci --no-audit --no-fund
	@touch node_modules

test: node_modules ## unit, adapter and simulator tests
	$(GO) test -count=1 $(PKGS)

lint: ## gofmt, go vet, go.mod tidy
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

bench: node_modules ## benchmarks (numbers go to BENCHMARKS.md)
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

.PHONY: cost cost-doc
cost: node_modules ## the monthly AWS bill at the seed's load, from the code's measured requests (~1 min; evalsched cost -h)
	$(GO) run ./cmd/evalsched cost

cost-doc: node_modules ## write that bill into docs/cost.md (TestCostDocMatchesTheCode checks it)
	$(GO) run ./cmd/evalsched cost --doc docs/cost.md >/dev/null

fuzz: ## each fuzz target for FUZZTIME
	@for t in $$(grep -rl --include='*_test.go' '^func Fuzz' internal cmd sandboxkit | xargs -n1 dirname | sort -u); do \
	  for f in $$(grep -h '^func Fuzz' $$t/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
	    echo "== $$t $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $${FUZZTIME:-30s} ./$$t || exit 1; \
	  done; \
	done

# `go run` exits 1 when interrupted, whatever the program's own exit: the
# binary is built and run directly, so a clean Ctrl-C ends without "Error 1".
local: node_modules build ## the whole system on this machine (DynamoDB Local, fauxqs, a simulated world); flags as ARGS="--speed 20"; Ctrl-C stops it
	@exec bin/evalsched local $(ARGS)

build: ## the operator CLI into bin/
	$(GO) build -o bin/evalsched ./cmd/evalsched

clean:
	rm -rf bin out

# --- sam build (template.yaml: Metadata BuildMethod: makefile, CodeUri: .) ---
# One target per function, build-<LogicalId>; sam build sets ARTIFACTS_DIR.
# provided.al2023 on arm64 runs the static binary named bootstrap;
# lambda.norpc leaves out the RPC mode that runtime never uses.
# internal/template's test reads these targets: keep one go build line each.

.PHONY: build-SchedulerFunction build-IntakeFunction build-TaskEventsFunction build-ResultsFunction

build-SchedulerFunction:
	@test -n "$(ARTIFACTS_DIR)" || { echo "ARTIFACTS_DIR is not set (sam build sets it)"; exit 1; }
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -trimpath -buildvcs=false -ldflags='-s -w' -o $(ARTIFACTS_DIR)/bootstrap ./functions/scheduler

build-IntakeFunction:
	@test -n "$(ARTIFACTS_DIR)" || { echo "ARTIFACTS_DIR is not set (sam build sets it)"; exit 1; }
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -trimpath -buildvcs=false -ldflags='-s -w' -o $(ARTIFACTS_DIR)/bootstrap ./functions/intake

build-TaskEventsFunction:
	@test -n "$(ARTIFACTS_DIR)" || { echo "ARTIFACTS_DIR is not set (sam build sets it)"; exit 1; }
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -trimpath -buildvcs=false -ldflags='-s -w' -o $(ARTIFACTS_DIR)/bootstrap ./functions/taskevents

build-ResultsFunction:
	@test -n "$(ARTIFACTS_DIR)" || { echo "ARTIFACTS_DIR is not set (sam build sets it)"; exit 1; }
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -trimpath -buildvcs=false -ldflags='-s -w' -o $(ARTIFACTS_DIR)/bootstrap ./functions/results

# --- chaos: the simulator with every fault (internal/sim/DESIGN.md, "Faults") ---
# Each shipped scenario under policy dynamic with --faults all, for 20 seeds:
# one summary line per run, then a total; the target fails when a run lost a
# job, launched one twice or broke an invariant (what broke, with times and
# jobs: out/chaos/SCENARIO-SEED.err).

CHAOS_SCENARIOS ?= seed-hot-lanes small-behind-big tiers-saturated
CHAOS_SEEDS     ?= $(shell seq 1 20)
CHAOS_JOBS      ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: chaos

chaos: ## every fault kind on the shipped scenarios, 20 seeds each; fails on any broken invariant
	@mkdir -p out/chaos && rm -f out/chaos/*
	$(GO) build -o bin/evalsched ./cmd/evalsched
	@for s in $(CHAOS_SCENARIOS); do for n in $(CHAOS_SEEDS); do echo "$$s $$n"; done; done | \
	  xargs -P $(CHAOS_JOBS) -L 1 sh -c 'bin/evalsched sim --scenario scenarios/$$0.json --policy dynamic --faults all --seed $$1 --summary --quiet >out/chaos/$$0-$$1.txt 2>out/chaos/$$0-$$1.err'; \
	runs=0; bad=0; \
	for s in $(CHAOS_SCENARIOS); do for n in $(CHAOS_SEEDS); do \
	  runs=$$((runs+1)); f=out/chaos/$$s-$$n; \
	  if [ -s $$f.txt ]; then cat $$f.txt; else echo "$$s seed=$$n: no summary line (see $$f.err)"; fi; \
	  grep -q ' ok$$' $$f.txt 2>/dev/null || bad=$$((bad+1)); \
	done; done; \
	echo "chaos: $$runs runs, $$bad broke an invariant"; \
	test $$bad -eq 0

# --- mutate: the exactly-once guards (internal/mutate/doc.go) ---
# Each mutation in internal/mutate/mutations.go (a store condition removed,
# an event check dropped, …) is applied to a copy of the tree and its tests
# run: the target fails when one survives. Not in make test (~5 min); make
# test checks that the list still applies to the source. MUTATE=regexp
# runs some.

.PHONY: mutate

mutate: node_modules ## apply each listed mutation to a copy of the tree and run its tests; fails if one survives
	$(GO) run ./internal/mutate -run '$(MUTATE)'

.PHONY: bench-scale
bench-scale: node_modules ## the scale benchmarks too slow for make bench: 1,000,000 jobs through Submit, one scheduler's limits, sharded passes (~35 min)
	EVALSCHED_BENCH_SCALE=1 $(GO) test -run '^$$' -bench 'PassAtScale|PassLimits|ShardPass' -benchtime 3x -benchmem -timeout 120m ./internal/dynamostore/

# --- the scenario family (scenarios/README.md, "Scenario family") ---
# 200 random lanes on the tuning seed and on a check seed nobody tuned on,
# each against its oracle; every lane's line goes to out/family-SEED.txt,
# the summaries to the terminal. Too slow for make test (minutes on two
# cores); internal/sim's TestFamily* cover the machinery.

FAMILY_N          ?= 200
FAMILY_TUNE_SEED  ?= 1
FAMILY_CHECK_SEED ?= 20261201
# The operator the README advises knows each provider's concurrency (the
# target depth is a few percent of it) and gives it; FAMILY_FLAGS= judges
# the lanes as drawn, without it.
FAMILY_FLAGS      ?= --configured-concurrency

.PHONY: family

family: ## the 200-lane scenario family on the tuning seed and the check seed; fails on a missed target
	@mkdir -p out
	$(GO) build -o bin/evalsched ./cmd/evalsched
	@rc=0; for s in $(FAMILY_TUNE_SEED) $(FAMILY_CHECK_SEED); do \
	  bin/evalsched sim --family $(FAMILY_N) --seed $$s $(FAMILY_FLAGS) >out/family-$$s.txt || rc=1; \
	  grep '^family seed' out/family-$$s.txt; \
	done; exit $$rc
