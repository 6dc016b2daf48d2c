#!/usr/bin/env bash
# Install the Debian packages agenthub needs to build, run and test, but only
# those that are missing, so `make run` is quick on a machine that has them.
set -euo pipefail
pkgs=(build-essential meson ninja-build pkg-config libmicrohttpd-dev libjansson-dev
      libyaml-dev libsqlite3-dev libpq-dev libcurl4-openssl-dev libssl-dev zlib1g-dev
      libcmocka-dev python3 python3-pytest python3-yaml openssl xorriso ignition
      iproute2 curl)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v kubectl >/dev/null 2>&1; then
	missing+=(kubernetes-client)
fi
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing: ${missing[*]}"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
