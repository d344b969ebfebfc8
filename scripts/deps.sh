#!/usr/bin/env bash
# Installs everything specdec's build and tests need on a fresh Debian 12 machine
# (run as root). Every dependency is a Debian package or, for the server's client
# tests, an npm package pinned by tests/server/package-lock.json; see README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(build-essential cmake pkg-config libpcre2-dev libjansson-dev libcmocka-dev
      python3-torch python3-numpy python3-regex python3-jinja2 libopenblas0-pthread clang
      libmicrohttpd-dev curl chromium)
# Test only: the aarch64 cross build run under qemu-user (scripts/test_aarch64.sh),
# with the arm64 builds of the libraries from Debian's multiarch archive.
dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
pkgs+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
       libpcre2-dev:arm64 libjansson-dev:arm64 libcmocka-dev:arm64 libmicrohttpd-dev:arm64)
# Node.js and npm from Debian, unless a node (with its npm) is already there.
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The official openai client (v6) and playwright-core (drives Debian's chromium;
# downloads no browser) for tests/server/.
# node_modules/.lock-installed remembers which lock file was installed.
if ! cmp -s tests/server/package-lock.json tests/server/node_modules/.lock-installed 2>/dev/null; then
  (cd tests/server && npm ci --ignore-scripts --no-audit --no-fund >/dev/null &&
   cp package-lock.json node_modules/.lock-installed)
fi
