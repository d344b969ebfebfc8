#!/usr/bin/env bash
# Installs everything specdec's build and tests need on a fresh Debian 12 machine
# (run as root). Every dependency is a Debian package; see README.md.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libpcre2-dev libjansson-dev libcmocka-dev
      python3-torch python3-numpy python3-regex python3-jinja2 libopenblas0-pthread clang)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
