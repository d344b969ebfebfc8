#!/usr/bin/env bash
# Graceful shutdown: on SIGTERM specdec serve stops accepting (a new
# connection is refused), finishes the streaming request in flight and the
# one waiting in the queue, and exits 0 (tests/server/drain_client.py). With
# a drain timeout shorter than the work left it cancels what runs and still
# exits 0 at the timeout.
source "$(dirname "$0")/lib.sh"
fail() { echo "FAIL: $*"; echo "--- server log"; tail -20 "$SERVER_LOG"; exit 1; }

start_server -m models/fixture-target.gguf -t 1 -c 2048 --drain-timeout 60
python3 tests/server/drain_client.py "$SERVER_PID" "$BASE" || fail "drain"
rc=0; wait "$SERVER_PID" || rc=$?
[ "$rc" = 0 ] || fail "exit status $rc after the drain"
grep -q "drained" "$SERVER_LOG" || fail "no 'drained' in the log"

# A timeout of 0.5 s against a 3000-token stream (seconds of work): cut at
# the timeout, exit 0, promptly.
start_server -m models/fixture-target.gguf -t 1 -c 4096 --drain-timeout 0.5
curl -sN "$BASE/v1/chat/completions" -d '{"messages":[{"role":"user","content":"Count: 1 2 3 4"}],"max_tokens":3000,"temperature":0.8,"seed":7,"stream":true,"speculative":false}' > "$TMP/cut" &
CURL=$!
for i in $(seq 1 100); do grep -q '^data: ' "$TMP/cut" && break; sleep 0.05; done
t0=$(date +%s%N)
kill -TERM "$SERVER_PID"
rc=0; wait "$SERVER_PID" || rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
wait "$CURL"
[ "$rc" = 0 ] || fail "exit status $rc after a drain timeout"
[ "$ms" -lt 5000 ] || fail "took $ms ms to stop with --drain-timeout 0.5"
grep -q "still in flight after the drain" "$SERVER_LOG" || fail "the cut request is not reported"
echo "ok  drain timeout: stopped in $ms ms, exit 0"
echo "drain: ok"
