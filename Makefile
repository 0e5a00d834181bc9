# hotpatch: two commands set up a fresh Debian 12 machine that has the Swift toolchain.
#   make run   installs what serving needs (not the test stack), builds, creates the demo app,
#              publishes patches/demo/2.3/main.js and serves it
#   make test  installs what is missing, builds and runs every test (and, in a second build,
#              the iOS code paths on Linux: make test-apple-shaped, docs/IOS.md)
#   make bench installs wrk, nginx and hyperfine too, builds for release and measures hotpatch
#              against nginx, OpenSSL and python-tuf, and on PostgreSQL against SQLite
#              (minutes; writes bench/results/RUN.json and docs/BENCHMARKS.md; ROWS=7a,10
#              measures only those rows)
#   make fuzz  builds the libFuzzer targets in fuzz/ and runs each for FUZZ_SECONDS (default 60),
#              then schemathesis against patchd for as long with a random seed
SHELL := /bin/bash
.DEFAULT_GOAL := build

# What building and serving need (`make build`, `make release`, `make run`; libpq-dev because
# `swift build` compiles every target, the Postgres one included) ...
APT_PACKAGES := libssl-dev libsqlite3-dev libzip-dev libcurl4-openssl-dev libpq-dev libjavascriptcoregtk-4.1-dev pkg-config openssl
# ... and what only the tests need: the python-tuf venv, curl, zip/unzip for JSPatch packages,
# the PostgreSQL 15 server the tests start a throwaway cluster of (scripts/pg-test-cluster.sh),
# haproxy, which test_haproxy.py starts on deploy/haproxy.cfg in front of two patchd, and
# chromium with chromium-driver, the headless browser test_console.py drives (selenium).
APT_TEST_PACKAGES := python3-venv curl zip unzip postgresql-15 haproxy chromium chromium-driver
# `make bench` also starts a PostgreSQL cluster and haproxy (rows 14-16): listed here as well
# as with the test packages so the bench does not rely on the test list keeping them.
APT_BENCH_PACKAGES := wrk nginx-light hyperfine postgresql-15 haproxy
VENV := .venv
PY := $(VENV)/bin/python
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DATA ?= data
KEYS ?= keys
LISTEN ?= 127.0.0.1:8080
# Runs a command with HOTPATCH_TEST_DATABASE naming a PostgreSQL cluster started for it and
# removed after it (or the one already named, so `make test` starts one for all its runs).
WITH_PG := ./scripts/pg-test-cluster.sh run

.PHONY: deps apt apt-test apt-bench venv build build-tests release test test-swift test-interop test-apple-shaped run bench soak fuzz clean

deps: apt apt-test venv

# $(call apt-install,PACKAGES) installs only what dpkg says is missing, so a prepared machine
# is not touched.
apt-install = @missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; fi

apt:
	$(call apt-install,$(APT_PACKAGES))

apt-test:
	$(call apt-install,$(APT_TEST_PACKAGES))

# Only `make bench` and `make soak` need these.
apt-bench:
	$(call apt-install,$(APT_BENCH_PACKAGES))

# python-tuf is the external TUF client our repositories must satisfy; cryptography and
# securesystemslib check our signatures and ciphertexts independently.
venv: apt-test $(VENV)/.ready
$(VENV)/.ready: Tests/interop/requirements.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r Tests/interop/requirements.txt
	touch $@

build: apt
	swift build

release: apt
	swift build -c release

# The Swift build and the Python venv are independent: made side by side (a fresh clone spends
# about 40 s in pip and 3.5 min compiling on 2 cores).
test: apt apt-test
	python3 bench/bench.py selftest
	$(MAKE) -j2 venv build-tests
	$(WITH_PG) $(MAKE) test-swift test-interop
	$(MAKE) test-apple-shaped

build-tests: apt
	swift build --build-tests

# Each layer is tested once, and the storage contract on both backends (docs/POSTGRES.md,
# "What make test runs on each backend"):
# - every Swift suite on SQLite, in two runs: PatchClientTests bound syncs by deadlines
#   (Task.sleep on Swift concurrency's pool, one thread per core), and the other suites block
#   pool threads for seconds at a time (CLI tests wait for the processes they start), which
#   made those deadlines fire late;
# - on PostgreSQL (HOTPATCH_TEST_REGISTRY=postgres: Tests/Support/TestBackend.swift gives each
#   test's data directory a schema of its own in the cluster) the suites of the registry, the
#   layer that meets the storage seam: every statement the registry runs, on both backends.
#   The server, CLI and client suites above it run once: they reach the database only through
#   the registry. `scripts/pg-statements.py` checks that this runs every statement the full
#   PostgreSQL pass did.
PG_REGISTRY := env HOTPATCH_TEST_REGISTRY=postgres
PG_SWIFT_SUITES := PatchRegistryTests|JSPatchRegistryTests|PostgresTests|PostgresAtRestTests
test-swift:
	$(WITH_PG) swift test --skip-build --skip PatchClientTests
	$(WITH_PG) swift test --skip-build --filter PatchClientTests
	$(WITH_PG) $(PG_REGISTRY) swift test --skip-build --filter '$(PG_SWIFT_SUITES)'

# The interop suite on SQLite, four tests at a time (pytest-xdist: most of its time is spent
# waiting on the processes it starts, on deadlines and on the browser); then on PostgreSQL the
# tests about the registry's storage through the binaries: crashes, kills and a full disk
# (test_hardening, test_registry_hardening), a registry that is not there or is empty (test_registry_file), two instances behind haproxy on one database
# (test_haproxy), the upkeep lease (test_upkeep_lease), rows tampered with in the database and
# the audit log's append-only triggers (test_cli_signing, the tampered-registry test of
# test_patchd), db copy, the versions devices ask for as patchd adds them up (test_app_versions)
# the test cluster itself, and webhooks (test_webhooks: the outbox through both backends, two
# instances delivering each event once).
INTEROP_PYTEST := env PATCHCTL=$(CURDIR)/.build/debug/patchctl PATCHD=$(CURDIR)/.build/debug/patchd $(PY) -m pytest -q -n 4
PG_INTEROP := Tests/interop/test_hardening.py Tests/interop/test_registry_hardening.py Tests/interop/test_haproxy.py \
	Tests/interop/test_upkeep_lease.py Tests/interop/test_registry_file.py Tests/interop/test_cli_signing.py \
	Tests/interop/test_patchd.py::test_verify_server_passes_then_fails_on_tampered_registry \
	Tests/interop/test_db_copy.py Tests/interop/test_app_versions.py Tests/interop/test_pg_test_cluster.py \
	Tests/interop/test_webhooks.py
test-interop:
	$(WITH_PG) $(INTEROP_PYTEST) Tests/interop
	$(WITH_PG) $(PG_REGISTRY) $(INTEROP_PYTEST) $(PG_INTEROP)

# The Apple-only client code, compiled and run on Linux (docs/IOS.md, "What is checked here"):
# a second build (HOTPATCH_APPLE_SHAPED=1, in a build directory of its own so neither build
# undoes the other) with PatchClient over swift-corelibs-foundation's URLSession, PatchCore's
# CryptoKit backend against test-only stand-ins over OpenSSL, and the Objective-C face's Swift
# half against a stand-in UIKit; then, in it, the client suites (the HTTPClient contract
# tests among them), the seam vectors and the module graph. On SQLite only: the client suites
# reach storage through the registry, which test-swift runs on both backends.
APPLE_SHAPED := env HOTPATCH_APPLE_SHAPED=1
APPLE_SHAPED_BUILD := .build/apple-shaped
test-apple-shaped: apt
	$(APPLE_SHAPED) swift build --build-tests --build-path $(APPLE_SHAPED_BUILD)
	$(APPLE_SHAPED) PATCHCTL=$(CURDIR)/$(APPLE_SHAPED_BUILD)/debug/patchctl swift test --skip-build --build-path $(APPLE_SHAPED_BUILD) \
	  --filter 'PatchClientTests|CryptoSeamTests|ClientModuleGraphTests'

run: release
	@./scripts/run-demo.sh "$(DATA)" "$(KEYS)" "$(LISTEN)"

# Not part of `make test`: it takes minutes and its figures are not assertions (bench/bench.py;
# docs/BENCHMARKS.md "Running it"). `make bench ROWS=7a,10` measures only those rows.
ROWS ?=
bench: apt-bench deps release .build/refserver
	python3 bench/bench.py run --rows '$(ROWS)' --command 'make bench$(if $(ROWS), ROWS=$(ROWS))'

# The reference server of rows 17a-c: the least an epoll HTTP server does per request.
.build/refserver: bench/refserver.c
	mkdir -p .build && cc -O2 -Wall -Wextra -o $@ $< -lpthread

# Load, memory, slowloris and drain soak of patchd (minutes; not part of `make test`).
soak: apt-bench deps release
	./soak/run.sh

# libFuzzer targets with AddressSanitizer (fuzz/run.sh, docs/SECURITY.md "Fuzzing"); not part
# of `make test`. New crash inputs are copied to fuzz/crashes/.
fuzz: deps
	./fuzz/run.sh

clean:
	rm -rf .build $(VENV)
