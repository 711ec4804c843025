# The two commands: `make run` serves on http://localhost:8080, `make test` runs every test.
# Both start the private PostgreSQL and Redis they need (scripts/services.sh) and stop them afterwards.

GO      ?= go
BIN     := bin/pastebin
PKGS    := ./...

.PHONY: run test test-suites test-service test-tools test-fuzz fuzz build image lint bench bench-cleanup bench-heavyday costs soak contract services-up services-down clean

# Expired pastes the cleanup benchmark loads (as many live ones beside them); 1000000 works too.
PASTES ?= 200000

# The chaos soak's length and operation budget (it stops at whichever comes first), and its Redis:
# single (one server) or cluster (three masters, one at a time killed and restarted).
SOAK_DURATION ?= 5m
SOAK_MAX_OPS  ?= 1000000
REDIS         ?= single

build:
	$(GO) build -o $(BIN) ./cmd/pastebin

# The container image (Containerfile), localhost/pastebin:<git describe>: a static binary and this
# machine's CA bundle on an empty base, built with podman (Debian's, installed the first time),
# pulling nothing. scripts/image.sh says which podman settings work on this machine.
image:
	GO=$(GO) scripts/image.sh build

# A development run listens on loopback only; PASTEBIN_ADDR=:8080 make run serves every interface.
# (serve's own default, :8080, is for deployments.)
PASTEBIN_ADDR ?= 127.0.0.1:8080

run: build
	PASTEBIN_ADDR='$(PASTEBIN_ADDR)' scripts/with-services.sh run $(BIN) serve

test: lint
	scripts/ensure-chromium.sh
	scripts/ensure-promtool.sh
	scripts/ensure-haste-clients.sh >/dev/null
	scripts/services.sh test tool podman >/dev/null
	scripts/services.sh test tool systemd-analyze >/dev/null
	scripts/with-services.sh test $(MAKE) --no-print-directory test-suites test-fuzz

# The API tests that create, read, delete and burn pastes (view limits too), and the operators' actions (cleanup runs,
# takedowns, blocks, the audit log, console sessions, abuse reports, creator keys and their races), run again through the pooler.
POOLED_API_TESTS := ^(TestRefCountStory|TestDedupDoesNotShow|TestConcurrentCreateDelete|TestBurnAfterReadingRace|TestViewLimitCountsDown|TestViewLimitExactlyOnceAcrossReplicas|TestCreateRacesCleanupToZero|TestIdempotencyKey|TestIdempotencyKeyConcurrentRetries|TestCreateJSON|TestReadRoutes|TestExpiredBeforeCleanupFromDatabase|TestDeletedNeverServedFromCache|TestAdminCleanupRun|TestTakedownAnswersReaders|TestTakedownRefusals|TestBlockedContentRefusedOnEveryCreateRoute|TestBlockRequests|TestAuditLogPages|TestConsoleSession|TestConsoleSessionIdleTimeout|TestUnblockNeedsAReason|TestIdempotencyKeyBoundToClient|TestReportAPI|TestAdminReports|TestCreatorKeyOnEveryCreateRoute|TestCreatorKeyRevocationRace|TestCreatorKeyTakedownUnderCreates|TestCreatorKeyAdminAPI)$$

# With the test services up (make test starts them): the service's tests and the tools module's
# (tools/: the 30-second chaos soak, and deploycheck, which builds the image and runs it) at the
# same time, as when the soak was one more package of the service's go test: moving it to its own
# module made make test no longer.
test-suites:
	$(MAKE) --no-print-directory -j2 test-service test-tools

# Every package of the service, then the database's paths again through pgbouncer in transaction
# pooling mode: the store and cleanup suites (claim, finish, watchdog, fsck) whole, and the API's
# create, read, delete and burn.
test-service:
	$(GO) test -count=1 -timeout 20m $(PKGS)
	PASTEBIN_TEST_VIA_POOLER=1 $(GO) test -count=1 -timeout 10m ./store/... ./expiry/...
	PASTEBIN_TEST_VIA_POOLER=1 $(GO) test -count=1 -timeout 10m -run '$(POOLED_API_TESTS)' ./api

test-tools:
	$(GO) -C tools test -count=1 -timeout 20m ./...

# Both modules, the service's and the tools' (tools/go.mod), vetted and tidy: go mod tidy -diff
# prints and fails on a requirement nothing imports or an import nothing requires.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) -C tools vet ./...
	$(GO) mod tidy -diff
	$(GO) -C tools mod tidy -diff

# Each fuzz target's run in make fuzz; FUZZ picks targets by name. make test gives each a count of
# inputs, not a duration: in Go 1.26 a duration's deadline can race the fuzz coordinator and fail a
# target that found nothing ("context deadline exceeded", golang/go#75804).
TEST_FUZZTIME ?= 4000x
FUZZTIME ?= 100000x
FUZZ     ?= .

# FuzzRouter sends its requests through the whole server, so the fuzz targets run with the test
# services up.
test-fuzz:
	GO=$(GO) scripts/fuzz.sh $(TEST_FUZZTIME)

fuzz:
	scripts/with-services.sh test env GO=$(GO) scripts/fuzz.sh $(FUZZTIME) '$(FUZZ)'

bench:
	scripts/with-services.sh test $(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# A command of the tools module (tools/<name>), built into bin/: run from here, its defaults
# (artifacts/, bin/pastebin) are the repository's.
tool-%:
	$(GO) -C tools build -o $(CURDIR)/bin/$* ./$*

# Cleanup throughput: naive loop, the subsystem with 1, 2 and 4 workers, and the set-based floor.
# Durable PostgreSQL settings of its own (the bench profile); the table goes to artifacts/.
bench-cleanup: tool-cleanupbench
	scripts/with-services.sh bench bin/cleanupbench -pastes $(PASTES) $(BENCH_ARGS)

# The heavy day (docs/performance.md, "The heavy day"): 10 million expired pastes among 20 million (PASTES= fewer),
# drained by two serve replicas under a foreground load, against the set-based floor and the load
# alone. The loaded data is kept for the next run (.pastebin/bench); the report and the plot go to
# artifacts/heavyday/. BENCH_ARGS passes flags (bin/heavyday -h after make tool-heavyday).
HEAVY_PASTES = $(if $(filter command line environment,$(origin PASTES)),$(PASTES),10000000)
bench-heavyday: build tool-heavyday
	scripts/with-services.sh bench bin/heavyday -pastes $(HEAVY_PASTES) $(BENCH_ARGS)

# What one paste costs: bytes per row and index entry, WAL per create, cleanup and purge, S3 and
# Redis calls per 1000 expirations, and what that comes to at the design notes' scale
# (docs/scaling.md, "Capacity on paper"). Durable PostgreSQL settings (the bench profile); written to artifacts/costs.txt.
costs: tool-costs
	scripts/with-services.sh bench bin/costs $(COSTS_ARGS)

# Chaos soak: serve processes SIGKILLed, Redis and S3 stopped and restarted under load, then fsck and
# every paste read back. Logs in artifacts/soak/. A 30-second version runs in make test (tools/soak).
# LB=haproxy: three serve processes behind HAProxy (installed with apt-get if missing), reaching
# PostgreSQL through pgbouncer, some restarted gracefully; a failed request is then a violation
# unless it was in flight on a process killed with SIGKILL.
LB ?=
SOAK_LB = $(if $(filter haproxy,$(LB)),-haproxy "$$(scripts/services.sh test tool haproxy)" -pooled -serves 3)
soak: build tool-soak
	scripts/with-services.sh test bin/soak -pastebin $(BIN) -duration $(SOAK_DURATION) \
	  -max-ops $(SOAK_MAX_OPS) -redis $(REDIS) -dir artifacts/soak $(SOAK_LB) $(SOAK_ARGS)

# The whole API through a validator nobody here wrote, Stoplight Prism's proxy (fetched from npm into
# npm's cache; needs Node.js): every operation, errors included, against openapi.yaml. Not in make test.
contract:
	scripts/with-services.sh run scripts/contract.sh

services-up:
	scripts/services.sh run up >/dev/null; scripts/services.sh run status

services-down:
	scripts/services.sh run down; scripts/services.sh test down; scripts/services.sh bench down

clean: services-down
	rm -rf bin .pastebin/run .pastebin/test .pastebin/bench
