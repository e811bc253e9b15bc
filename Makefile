# The two commands a newcomer needs are `make demo` and `make test`; both set themselves up.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PROTO_SRC := $(shell find protos -name '*.proto')
PROTO_OUT := services/jackpot/v1
KAFKA := deploy/local/kafka.sh
# The font of the pages and the report's PDF (Debian's fonts-dejavu-core).
DEJAVU := /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
PYTEST := $(BIN)/python -m pytest
SCENARIOS ?= tests/golden

.PHONY: help setup browser monitoring-tools monitor proto demo-report test-e2e loadtest chaos chaos-campaign soak wan toxiproxy proto-lint proto-breaking proto-test lint test test-unit test-integration test-cluster bench bench-land-pairs bench-history \
        demo kafka-up kafka-down kafka-cluster-up kafka-cluster-down kafka-secure-cluster-up \
        kafka-secure-cluster-down clean

help: ## list the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-20s %s\n", $$1, $$2}'

setup: $(VENV)/.installed $(PROTO_OUT)/.generated proto-tools/node_modules/.installed browser monitoring-tools ## Python venv, protobuf code, build tools, Kafka, Chromium, Prometheus (idempotent)
	@$(KAFKA) install
	@$(BIN)/jackpot manifest >/dev/null  # R6: the files every service verifies at start (docs/security.md)

browser: ## Debian's Chromium (the pages' browser tests, the report's PDF) and poppler (the PDF's page images)
	@command -v chromium >/dev/null && command -v pdftoppm >/dev/null && [ -f $(DEJAVU) ] || { \
	  if [ "$$(id -u)" != 0 ]; then echo "install Debian's packages: sudo apt-get install -y chromium poppler-utils fonts-dejavu-core" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium poppler-utils fonts-dejavu-core >/dev/null; }

monitoring-tools: ## Debian's prometheus package: promtool for the alert tests, Prometheus for `make monitor`
	@command -v promtool >/dev/null && command -v prometheus >/dev/null || { \
	  if [ "$$(id -u)" != 0 ]; then echo "install Debian's prometheus: sudo apt-get install -y --no-install-recommends prometheus" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }

$(VENV)/.installed: requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c requirements.lock -e '.[dev]'
	@touch $@

$(PROTO_OUT)/.generated: $(VENV)/.installed $(PROTO_SRC)
	rm -rf $(PROTO_OUT)
	$(BIN)/python -m grpc_tools.protoc -Iprotos --python_out=services --pyi_out=services \
	  --grpc_python_out=services $(PROTO_SRC)
	touch $(PROTO_OUT)/__init__.py $(PROTO_OUT)/py.typed
	@touch $@

proto: ## regenerate the protobuf code from protos/
	rm -f $(PROTO_OUT)/.generated
	$(MAKE) $(PROTO_OUT)/.generated

proto-tools/node_modules/.installed: proto-tools/package.json proto-tools/package-lock.json
	cd proto-tools && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

proto-lint: proto-tools/node_modules/.installed ## buf lint on the protobuf contracts
	proto-tools/node_modules/.bin/buf lint

# buf breaking (issue 23: records outlive releases). "Previous" is main's: the working tree is
# checked against HEAD~1 (on a branch off main, against the merge-base: the whole branch;
# PROTO_AGAINST=<ref> names another base), which in CI's clean fresh clone is HEAD against HEAD~1,
# the change that landed; and, when protos/ has uncommitted changes, against HEAD too, the change
# about to be committed. No previous commit, a shallow clone, an unknown ref: a message, no
# failure. No network (buf reads .git). proto-tools/buf-breaking.sh says more; tests/proto proves it.
proto-breaking: proto-tools/node_modules/.installed ## buf breaking: protos/ against main's previous commit (and HEAD, if changed)
	BUF=proto-tools/node_modules/.bin/buf PROTO_AGAINST='$(PROTO_AGAINST)' proto-tools/buf-breaking.sh

proto-test: $(VENV)/.installed proto-tools/node_modules/.installed ## buf breaking refuses incompatible changes in a scratch repository (tests/proto)
	$(PYTEST) -m proto -q tests/proto

lint: setup proto-lint proto-breaking ## ruff + mypy (strict on jackpot.domain) + buf lint + buf breaking
	$(BIN)/ruff check services tests loadtest
	$(BIN)/ruff format --check services tests loadtest
	$(BIN)/mypy

test-unit: setup ## pure tests, no I/O (seconds)
	$(PYTEST) -m unit -q

test-integration: setup ## tests against a real Kafka broker (started if needed)
	$(PYTEST) -m integration -q

test-e2e: setup ## the whole floor as processes: headless demo, audit, nothing lost
	$(PYTEST) -m e2e -q tests/e2e

test-cluster: setup ## fault tests against the local three-node cluster (slow)
	$(PYTEST) -m cluster -q

test: lint k8s-tools image kafka-image toxiproxy ## lint + unit (in a random order) + proto + golden rounds + integration + cluster + k8s + image + e2e: what CI runs
	$(PYTEST) -m unit -q --random-order  # a new order each run; its seed is printed (issue 24)
	$(PYTEST) -m proto -q tests/proto
	$(BIN)/jackpot resolve --check --require-reasons $(SCENARIOS)/*.json
	$(PYTEST) -m 'integration or cluster' -q
	$(PYTEST) -m deploy -q tests/deploy
	$(PYTEST) -m image -q tests/image
	$(PYTEST) -m e2e -q tests/e2e

bench: setup ## every benchmark in one run on a fresh broker of its own, one table of figures and ratios (about 10 minutes)
	@mkdir -p build
	$(BIN)/python -m loadtest.bench --json build/bench.json

bench-land-pairs: setup ## row 7's land floor alone and beside a studio hit every minute, 3 pairs alternated, 300 s each: the ratio of the medians against 1.10 (about 35 minutes; PAIRS=5)
	$(BIN)/python -m loadtest.bench_studio --pairs $${PAIRS:-3}

bench-history: setup ## pot takeover, start-up, audit, report, restore on 0, 1 and 7 days of 300 tables (HISTORY_ARGS='--days 30'; build/bench.json history.*)
	@[ -n "$${KAFKA_BOOTSTRAP_SERVERS:-}" ] || $(KAFKA) up
	@mkdir -p build
	$(BIN)/python -m loadtest.history --json build/bench.json $(HISTORY_ARGS)

chaos: setup ## fault suite: kill -9 of pot (20x), gateway, payout, display; 20 s pauses of pot and payout; device faults; site cut-off (root) (build/chaos/)
	$(BIN)/python -m loadtest.chaos --device-faults 0.05 --site-cutoff 20 --pause pot:20 --pause payout:20

chaos-campaign: setup ## fault campaign: 30 short runs on the three-broker cluster, each with its seed: broker kill -9s, broker pauses, a whole-cluster restart mid-transaction; judged by the books, the round oracle, the takeover check, no unexpected exit (build/chaos-campaign/; CAMPAIGN_ARGS='--runs 1 --seed S' reruns one)
	$(BIN)/python -m loadtest.campaign --runs 30 --out build/chaos-campaign $(CAMPAIGN_ARGS)

wan: setup toxiproxy ## a remote site over WAN profiles (metro, regional, satellite; stalls, a cut, a flapping link) through Toxiproxy (root; build/wan/)
	$(BIN)/python -m loadtest.wan --profiles metro,regional,satellite

# Shopify's Toxiproxy, built from the Go module proxy into the cache (the WAN between a site and
# the central brokers; loadtest/toxiproxy.py drives it).
TOXIPROXY_VERSION := 2.5.0
TOXIPROXY := $${JACKPOT_CACHE:-$$HOME/.cache/jackpot}/toxiproxy-$(TOXIPROXY_VERSION)
toxiproxy: ## Toxiproxy $(TOXIPROXY_VERSION) from the Go module proxy (go install; make wan and the WAN test use it)
	@[ -x $(TOXIPROXY)/server ] || GOBIN=$(TOXIPROXY) GOFLAGS=-mod=mod go install github.com/Shopify/toxiproxy/v2/cmd/server@v$(TOXIPROXY_VERSION)

soak: setup ## 30 min of payments under payout kill -9s, stalled zombies, broker kill -9s; paid twice must be 0 (build/soak/; not in make test)
	$(BIN)/python -m loadtest.soak --minutes 30 --cluster

loadtest: setup ## step the floor's rate up until p99 lock-to-sign passes 250 ms (build/loadtest/)
	$(BIN)/python -m loadtest.run

demo: setup ## the whole floor: Kafka, every service, ~20 simulated tables; Ctrl-C stops it
	$(BIN)/jackpot demo

monitor: setup ## Prometheus on 127.0.0.1:9090 scraping the demo's services, with the alerts of deploy/k8s; run beside make demo
	$(BIN)/python -m loadtest.monitor

demo-report: setup ## headless demo for 60 s; writes build/demo-report.json (exit 0 only if audit passes)
	@mkdir -p build
	$(BIN)/jackpot demo --duration 60 --report build/demo-report.json

kafka-up: ## one local broker on 127.0.0.1:9092
	$(KAFKA) up
kafka-down:
	$(KAFKA) down
kafka-cluster-up: ## three local brokers on 127.0.0.1:9192,9292,9392
	$(KAFKA) cluster-up
kafka-cluster-down:
	$(KAFKA) cluster-down
kafka-secure-cluster-up: $(VENV)/.installed ## three brokers with TLS, SCRAM users, ACLs: SASL_SSL on 127.0.0.1:9194,9294,9394
	$(KAFKA) secure-cluster-up
kafka-secure-cluster-down: ## stop the secure cluster (kept in .run/kafka/secure; kafka.sh secure-cluster-reset wipes it)
	$(KAFKA) secure-cluster-down

include deploy/k8s/k8s.mk
include deploy/image/image.mk

clean: ## remove the venv, generated code and local state (stops brokers first)
	-$(KAFKA) down
	-$(KAFKA) cluster-down
	-$(KAFKA) secure-cluster-down
	rm -rf $(VENV) $(PROTO_OUT) .run build proto-tools/node_modules .mypy_cache .ruff_cache .pytest_cache
