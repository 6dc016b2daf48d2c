# Thin front for Meson + Ninja.  `make` builds, `make run` runs the hub on
# ./data, `make test` runs every test (unit + end-to-end with real kubectl).
BUILD ?= build
MESON_OPTS ?=
DATA ?= data
LISTEN ?= 127.0.0.1:6443

.PHONY: all build deps run test test-pg unit e2e clean asan

all: build

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

build: $(BUILD)/build.ninja
	ninja -C $(BUILD)

# Install the Debian packages the build and tests need, only when missing.
deps:
	@scripts/install-deps.sh

run: deps build
	$(BUILD)/agenthub serve --data-dir $(DATA) --listen $(LISTEN)

unit: build
	meson test -C $(BUILD) --print-errorlogs

e2e: build
	AGENTHUB_BUILD=$(abspath $(BUILD)) /usr/bin/python3 -m pytest -q tests/e2e

test: deps build
	scripts/run-tests.sh $(BUILD)

# The end-to-end suite again with every hub on PostgreSQL (a real server from
# Debian's postgresql, started by the tests); the unit tests already cover the
# PostgreSQL store (store-postgres).  Kept out of `make test` so that stays
# under 20 minutes.
test-pg: deps build
	AGENTHUB_STORE=postgres scripts/run-tests.sh $(BUILD) e2e

asan:
	$(MAKE) BUILD=build-asan MESON_OPTS="-Db_sanitize=address,undefined -Db_lundef=false" test

clean:
	rm -rf $(BUILD) build-asan
