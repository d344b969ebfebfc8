#!/usr/bin/env bash
# Load test of specdec serve on the fixture models (a benchmark, not a test):
#   bench/serve_load.sh [CLIENTS=8] [REQUESTS=64] [MAX_TOKENS=64] [extra serve options...]
# Starts the server on a free port of 127.0.0.1 (build/specdec, or $SPECDEC), runs
# bench/serve_load.mjs with speculation on and then off, and stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
C=${1:-8}; R=${2:-64}; N=${3:-64}; shift $(( $# < 3 ? $# : 3 ))
BIN=${SPECDEC:-build/specdec}
log=$(mktemp)
"$BIN" serve --host 127.0.0.1 --port 0 --queue "$C" "$@" 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 300); do
  port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$log"); [ -n "$port" ] && break; sleep 0.1
done
[ -n "${port:-}" ] || { cat "$log"; exit 1; }
head -1 "$log"
node bench/serve_load.mjs "http://127.0.0.1:$port" "$C" "$R" "$N" true
node bench/serve_load.mjs "http://127.0.0.1:$port" "$C" "$R" "$N" false
