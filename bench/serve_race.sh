#!/usr/bin/env bash
# specdec serve against llama.cpp with 1..16 concurrent clients (a benchmark,
# not a test): total tok/s and request latency p50/p99 per client count,
# specdec speculation off / on / auto over HTTP, llama.cpp through
# node-llama-cpp in-process with one context of C sequences. One markdown
# table per model and parity lines on stdout, progress on stderr.
#   bench/serve_race.sh -m MODEL.gguf [-m MODEL2.gguf] [--clients "1 2 4 8 16"] [-n 32] [--quick] [--json OUT.json]
#   bench/serve_race.sh --help          (every option)
# Needs build/specdec (cmake --build build --target specdec) and
# bench/vs-llamacpp/node_modules (npm ci there).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "${SPECDEC:-build/specdec}" ] || { echo "serve_race: ${SPECDEC:-build/specdec} not built (cmake --build build --target specdec)" >&2; exit 1; }
[ -d bench/vs-llamacpp/node_modules/node-llama-cpp ] || { echo "serve_race: node-llama-cpp missing (cd bench/vs-llamacpp && npm ci)" >&2; exit 1; }
exec node bench/vs-llamacpp/serve_race.mjs --specdec "$(realpath "${SPECDEC:-build/specdec}")" "$@"
