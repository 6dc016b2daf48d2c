#!/usr/bin/env bash
# Install the Debian packages agenthub needs to build, run and test, but only
# those that are missing, so `make run` is quick on a machine that has them.
set -euo pipefail
pkgs=(build-essential meson ninja-build pkg-config libmicrohttpd-dev libjansson-dev
      libyaml-dev libsqlite3-dev libpq-dev libcurl4-openssl-dev libssl-dev zlib1g-dev
      libcmocka-dev libjq-dev postgresql libprotobuf-c-dev protobuf-c-compiler python3 python3-pytest python3-pytest-xdist python3-yaml
      python3-kubernetes openssl xorriso ignition prometheus
      clang libclang-rt-dev iproute2 curl haproxy)  # postgresql: the server the PostgreSQL store tests start; haproxy: the balancer of tests/e2e/test_failover.py; clang + libFuzzer runtime: scripts/run-fuzz.sh
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v kubectl >/dev/null 2>&1; then
	missing+=(kubernetes-client)
fi
# Node.js 18+ and npm for the JS client tests; a machine whose nodejs
# package already brings npm (as some builds do) needs nothing more.
if ! command -v node >/dev/null 2>&1; then
	missing+=(nodejs)
fi
if ! command -v npm >/dev/null 2>&1; then
	missing+=(npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing: ${missing[*]}"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

# The JavaScript client test suite (tests/clients/js): installed from its
# lockfile with `npm ci`, and only when the lockfile changed since the last
# install (a stamp in node_modules holds its checksum).
js=$(cd "$(dirname "$0")/.." && pwd)/tests/clients/js
if [ -f "$js/package-lock.json" ]; then
	sum=$(sha256sum "$js/package-lock.json" | cut -d' ' -f1)
	if [ "$(cat "$js/node_modules/.agenthub-lock.sha256" 2>/dev/null)" != "$sum" ]; then
		echo "installing the JS client test dependencies (npm ci)"
		(cd "$js" && npm ci --no-audit --no-fund --loglevel=error)
		echo "$sum" > "$js/node_modules/.agenthub-lock.sha256"
	fi
fi
