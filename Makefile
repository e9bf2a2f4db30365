# Herald's two entry points. Both install what is missing first (Debian packages; this runs as root
# on the project's machines and CI, otherwise through sudo), so a fresh clone needs nothing else.

SWIFT ?= swift
APT_PACKAGES := librdkafka-dev libicu-dev libsqlite3-dev zlib1g-dev postgresql kcat pkg-config nghttp2-client
SUDO := $(shell [ "$$(id -u)" = "0" ] || echo sudo)

.PHONY: run test build release deps format lint bench-kafka bench-decisions bench-pipeline bench-replay broker clean

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
	$(SWIFT) test --skip HeraldWorkerTests --skip HeraldSenderTests --skip DevCommandTests
	$(SWIFT) test --filter HeraldWorkerTests
	$(SWIFT) test --filter 'HeraldSenderTests|DevCommandTests'

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release --product herald

## bench-kafka: the Kafka passthrough baseline (release build, 3 rounds of 1,000,000 messages).
bench-kafka: release
	.build/release/herald bench kafka

## bench-decisions: decisions per second against 1,000,000 devices, with SQLite and with PostgreSQL.
bench-decisions: release
	.build/release/herald bench decisions
	scripts/with-postgres .build/release/herald bench decisions --store '$$HERALD_STORE'

## bench-pipeline: 1,000,000 mixed events through the worker (SQLite), with the raw passthrough.
bench-pipeline: release
	.build/release/herald bench pipeline

## bench-replay: 1,000,000 recorded events replayed with the in-memory store.
bench-replay: release
	.build/release/herald bench replay

broker: build
	.build/debug/herald broker

## deps: install the Debian packages Herald builds and tests against, if any is missing.
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

format:
	$(SWIFT) format --in-place --recursive --configuration .swift-format Package.swift Sources Tests

lint:
	$(SWIFT) format lint --strict --recursive --configuration .swift-format Package.swift Sources Tests

clean:
	rm -rf .build
