# Herald's two entry points. Both install what is missing first (Debian packages; this runs as root
# on the project's machines and CI, otherwise through sudo), so a fresh clone needs nothing else.

SWIFT ?= swift
APT_PACKAGES := librdkafka-dev libicu-dev libsqlite3-dev zlib1g-dev libjemalloc-dev postgresql kcat pkg-config nghttp2-client curl
# What the tests validate Deploy/ with: promtool (alert rules) and docker-compose (the compose file).
DEPLOY_TOOLS := prometheus docker-compose
SUDO := $(shell [ "$$(id -u)" = "0" ] || echo sudo)

.PHONY: run test build release deps format lint bench-check bench-kafka bench-decisions bench-pipeline bench-replay bench-sender bench-scale broker clean

## run: build and run the whole pipeline on embedded defaults (`herald dev`): the sample events in,
## notifications out, as a phone would show them, then a summary.
run: deps
	$(SWIFT) build --product herald
	.build/debug/herald dev

## test: build and run the whole test suite.
test: deps
	$(SWIFT) build --build-tests
	# The worker's, the sender's and `herald dev`'s end-to-end tests load both cores; they run after the
	# timing-sensitive consumer-group tests rather than beside them.
	SWIFT=$(SWIFT) scripts/test-phase --skip HeraldWorkerTests --skip HeraldSenderTests --skip DevCommandTests --skip /BrokerOutage/ --skip BenchCommandTests
	# The CLI benchmarks (`herald bench pipeline|decisions|sender|kafka`) each run a whole pipeline,
	# broker or sender in processes of their own. Beside the rest of the first phase they held both
	# cores (`bench sender` twice saw its calls pass APNs' timeout), and the timing-bound consumer-group
	# tests ran beside them: a phase of their own. The one pattern both skips them above and selects
	# them here, so each test runs in exactly one phase; it also takes the quick `herald bench options`
	# suite of the same file (9 tests in 5 suites in CI, the first phase 360).
	SWIFT=$(SWIFT) scripts/test-phase --filter BenchCommandTests
	SWIFT=$(SWIFT) scripts/test-phase --filter HeraldWorkerTests --skip ScaleOutTests --skip /BrokerOutage/
	SWIFT=$(SWIFT) scripts/test-phase --filter HeraldSenderTests --skip /BrokerOutage/
	# Tests that take the embedded broker down (the suites named BrokerOutage), alone and one at a time.
	# librdkafka's mock broker, taken down, closes its listening socket and binds a new one to the same
	# port at once, and asserts (aborting the whole test process) that the bind worked. It failed once,
	# in 2753218's CI, most likely because a socket of one of the tests running beside it took the port
	# in between, the process being stalled under load. Alone, nothing else binds a port meanwhile.
	SWIFT=$(SWIFT) scripts/test-phase --filter /BrokerOutage/ --no-parallel
	# `herald dev` runs the whole pipeline in a process of its own: beside the sender's 10,000-call
	# chaos test it slowed that test's retries past its wait.
	SWIFT=$(SWIFT) scripts/test-phase --filter DevCommandTests
	# The scale-out test runs seven processes on the machine's cores: alone, after the rest, so that it
	# does not starve the timing-bound worker tests (a kill-and-restart test waits at most 60 s).
	SWIFT=$(SWIFT) scripts/test-phase --filter ScaleOutTests

build: deps
	$(SWIFT) build

## release: the binary the benchmarks run, built as the container image builds it (Deploy/container):
## with the Swift runtime linked in, whose calls (a retain, a release, a hash) are then direct rather
## than through the shared library's stubs: about 7% of replay's throughput in alternated runs, and
## what production runs.
release: deps
	$(SWIFT) build -c release --product herald --static-swift-stdlib

## bench-check: instructions per event of replay and of the whole pipeline, per decision read from
## SQLite (`bench decisions` without the directory cache) and per directory change applied
## (`bench decisions`' seeding), counted with callgrind, against
## Benchmarks/instruction-budgets: fails on a count over its budget. CI runs it after the tests.
bench-check: release
	scripts/check-instruction-budgets .build/release/herald

## bench-kafka: the Kafka passthrough baseline (release build, 3 rounds of 1,000,000 messages).
bench-kafka: release
	.build/release/herald bench kafka

## bench-decisions: decisions per second against 1,000,000 devices, with SQLite (sequential, then
## random event ids) and with PostgreSQL.
bench-decisions: release
	.build/release/herald bench decisions
	.build/release/herald bench decisions --random-event-ids
	scripts/with-postgres .build/release/herald bench decisions --store '$$HERALD_STORE'

## bench-pipeline: 1,000,000 mixed events through the worker (SQLite), with the raw passthrough.
bench-pipeline: release
	.build/release/herald bench pipeline

## bench-replay: 1,000,000 recorded events replayed with the in-memory store.
bench-replay: release
	.build/release/herald bench replay

## bench-sender: 200,000 APNs calls through the sender against the provider simulator, after h2load
## against the same simulator for the ratio.
bench-sender: release
	.build/release/herald bench sender

## bench-scale: worker and sender processes on one PostgreSQL: 100,000 events with 1, 2 and 3 workers,
## then 3 workers with one killed midway; lost and duplicated deliveries counted at the simulator.
bench-scale: release
	scripts/with-postgres .build/release/herald bench scale --store '$$HERALD_STORE' --workers 1,2,3
	scripts/with-postgres .build/release/herald bench scale --store '$$HERALD_STORE' --workers 3 --kill

broker: build
	.build/debug/herald broker

## deps: install the Debian packages Herald builds and tests against, if any is missing.
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	tools=""; for p in $(DEPLOY_TOOLS); do dpkg -s $$p >/dev/null 2>&1 || tools="$$tools $$p"; done; \
	if [ -n "$$missing$$tools" ]; then $(SUDO) apt-get update -qq; fi; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi; \
	if [ -n "$$tools" ]; then \
		echo "installing:$$tools"; \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$tools; \
	fi

format:
	$(SWIFT) format --in-place --recursive --configuration .swift-format Package.swift Sources Tests

lint:
	$(SWIFT) format lint --strict --recursive --configuration .swift-format Package.swift Sources Tests

clean:
	rm -rf .build
