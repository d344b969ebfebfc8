#!/usr/bin/env bash
# Throughput and latency of `specdec serve` with concurrent clients, one
# request at a time (--parallel 1) against continuous batching (--parallel P),
# speculation off and on (a benchmark, not a test):
#   bench/serve_parallel.sh MODEL.gguf [P=8] [MAX_TOKENS=32] [CLIENTS="1 2 4 8"] [extra serve options...]
# For each server and each client count C, bench/serve_load.mjs sends 2C
# streaming requests (at least 4) with speculation on, then off; prints one
# markdown row per run: parallel, clients, speculative, total generated tok/s,
# latency p50 / p99, acceptance.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:?usage: bench/serve_parallel.sh MODEL.gguf [P] [MAX_TOKENS] [CLIENTS] [serve options...]}
P=${2:-8}; N=${3:-32}; CLIENTS=${4:-"1 2 4 8"}; shift $(( $# < 4 ? $# : 4 ))
BIN=${SPECDEC:-build/specdec}
echo "| parallel | clients | speculative | tok/s (total) | p50 ms | p99 ms | acceptance |"
echo "|---|---|---|---|---|---|---|"
for par in 1 "$P"; do
  log=$(mktemp)
  "$BIN" serve -m "$MODEL" --host 127.0.0.1 --port 0 --queue 64 --parallel "$par" "$@" 2>"$log" &
  pid=$!
  port=
  for _ in $(seq 1 600); do
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$log"); [ -n "$port" ] && break; sleep 0.1
  done
  [ -n "$port" ] || { cat "$log"; kill $pid; exit 1; }
  for c in $CLIENTS; do
    r=$(( 2 * c < 4 ? 4 : 2 * c ))
    for spec in true false; do
      out=$(node bench/serve_load.mjs "http://127.0.0.1:$port" "$c" "$r" "$N" "$spec")
      tps=$(sed -n 's|.*req/s \| \([0-9.]*\) generated tok/s.*|\1|p' <<<"$out")
      lat=$(sed -n 's|^latency p50 \([0-9]*\) ms, p99 \([0-9]*\) ms.*|\1 \2|p' <<<"$out")
      acc=$(sed -n 's|^acceptance \([^ ]*\).*|\1|p' <<<"$out")
      echo "| $par | $c | $spec | $tps | ${lat% *} | ${lat#* } | $acc |"
    done
  done
  kill $pid; wait $pid 2>/dev/null || true
  rm -f "$log"
done
