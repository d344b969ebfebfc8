# Shared by the server tests: start `specdec serve` on a free port of
# 127.0.0.1 (it picks one: --port 0) and always stop it on exit.
#   start_server [serve options...]   sets SERVER_PID, PORT, BASE; logs to $SERVER_LOG
# SD_SERVE_PARALLEL=N runs the servers started without --parallel with
# --parallel N (the default is the machine's), so a test can be run with
# one slot and with several.
set -u
BIN=${SD_SPECDEC_BIN:-build/specdec}
cd "${SD_SOURCE_DIR:-$(dirname "${BASH_SOURCE[0]}")/../..}"
TMP=$(mktemp -d)
SERVER_PIDS=()
cleanup() {
  local p
  for p in "${SERVER_PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${SERVER_PIDS[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT

start_server() {
  SERVER_LOG=$TMP/server.$RANDOM.log
  local a par=()
  if [ -n "${SD_SERVE_PARALLEL:-}" ]; then
    par=(--parallel "$SD_SERVE_PARALLEL")
    for a in "$@"; do [ "$a" = --parallel ] && par=(); done
  fi
  "$BIN" serve --host 127.0.0.1 --port 0 "$@" "${par[@]}" 2>"$SERVER_LOG" &
  SERVER_PID=$!
  SERVER_PIDS+=("$SERVER_PID")
  local i
  for i in $(seq 1 600); do
    PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$SERVER_LOG")
    [ -n "$PORT" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || { echo "server exited:"; cat "$SERVER_LOG"; exit 1; }
    sleep 0.1
  done
  [ -n "$PORT" ] || { echo "server did not start:"; cat "$SERVER_LOG"; exit 1; }
  BASE=http://127.0.0.1:$PORT
}

# Stops a server started by start_server and checks it exited cleanly (0).
stop_server() {
  kill -TERM "$1"
  local rc=0
  wait "$1" || rc=$?
  [ "$rc" = 0 ] || { echo "server exited with $rc:"; cat "$SERVER_LOG"; exit 1; }
}

need_node_modules() {
  if [ ! -d tests/server/node_modules/openai ]; then
    echo "tests/server/node_modules missing: run scripts/deps.sh --test (npm ci in tests/server)"
    exit 1
  fi
}
