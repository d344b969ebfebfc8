#!/usr/bin/env bash
# Installs what specdec needs on a fresh Debian 12 machine (run as root).
#   scripts/deps.sh          building and running specdec: compiler, cmake and the
#                            libraries it links (pcre2, jansson, libmicrohttpd)
#   scripts/deps.sh --test   also the test suite's, fuzzing's and training's:
#                            cmocka, python3 with torch (the float64 reference),
#                            pip and setuptools (installing python/),
#                            clang (libFuzzer), tmux (the terminal chat test),
#                            node/npm with the server's npm packages and the
#                            coding agent its agent test runs (tests/agent,
#                            ~420 MB: kept out of the plain install), chromium,
#                            nginx (the scale-out test: replicas behind a balancer),
#                            python3-jsonschema and python3-rfc3339 (the JSON
#                            Schema converter's reference validator)
# Every dependency is a Debian package or, for the server's client tests, an npm
# package pinned by tests/server/package-lock.json or tests/agent/package-lock.json;
# see docs/DEPENDENCIES.md.
set -euo pipefail
cd "$(dirname "$0")/.."
test_deps=false
case "${1:-}" in
  "") ;;
  --test) test_deps=true ;;
  *) echo "usage: scripts/deps.sh [--test]" >&2; exit 2 ;;
esac
pkgs=(build-essential cmake pkg-config libpcre2-dev libjansson-dev libmicrohttpd-dev)
if $test_deps; then
  pkgs+=(libcmocka-dev python3-torch python3-numpy python3-regex python3-jinja2 python3-pip python3-setuptools
         libopenblas0-pthread clang curl tmux chromium nginx)
  # The JSON Schema converter's reference validator and its date-time / time checks.
  pkgs+=(python3-jsonschema python3-rfc3339)
  # Node.js and npm from Debian, unless a node (with its npm) is already there.
  command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
  command -v npm >/dev/null 2>&1 || pkgs+=(npm)
  # The aarch64 cross build run under qemu-user (scripts/test_aarch64.sh), with
  # the arm64 builds of the libraries from Debian's multiarch archive.
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  pkgs+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
         libpcre2-dev:arm64 libjansson-dev:arm64 libcmocka-dev:arm64 libmicrohttpd-dev:arm64)
fi
missing=()
# Native packages are asked for with the native architecture spelled out: once
# arm64 is a foreign architecture, `dpkg -s libpcre2-dev` is ambiguous (both
# copies installed) and would read as missing.
native=$(dpkg --print-architecture)
for p in "${pkgs[@]}"; do
  q=$p; [[ $p == *:* ]] || q=$p:$native
  dpkg -s "$q" >/dev/null 2>&1 || dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
$test_deps || exit 0
# The official openai client (v6) and playwright-core (drives Debian's chromium;
# downloads no browser) for tests/server/.
# node_modules/.lock-installed remembers which lock file was installed.
if ! cmp -s tests/server/package-lock.json tests/server/node_modules/.lock-installed 2>/dev/null; then
  (cd tests/server && npm ci --ignore-scripts --no-audit --no-fund >/dev/null &&
   cp package-lock.json node_modules/.lock-installed)
fi
# The npm coding agent (opencode-ai) that tests/server/server_agent.test.sh
# points at `specdec serve`, with the plugin package opencode would otherwise
# fetch into its config directory on a first run. `npm install` (not `npm ci`):
# the lock lists opencode's binary packages for linux-x64 only, and npm ci
# refuses a lock without the other platforms'; install honours the lock's
# versions and integrity all the same (--no-save: the lock is left as it is).
# Scripts stay off as above; the one opencode-ai needs (it links the binary
# for this CPU, AVX2 or not, as bin/opencode.exe; no network) is run by hand.
if ! cmp -s tests/agent/package-lock.json tests/agent/node_modules/.lock-installed 2>/dev/null; then
  (cd tests/agent && npm install --no-save --ignore-scripts --no-audit --no-fund >/dev/null &&
   (cd node_modules/opencode-ai && node postinstall.mjs >/dev/null) &&
   cp package-lock.json node_modules/.lock-installed)
fi
