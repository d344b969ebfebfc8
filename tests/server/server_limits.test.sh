#!/usr/bin/env bash
# Limits on what a client controls (docs/SECURITY.md), each triggered and
# counted in /metrics: --max-prompt, --max-tokens, --max-body, the deadline
# for receiving a request (a one-byte-a-second sender and unfinished headers
# are closed, not kept alive by their trickle), the connection limits per
# address and overall, the queue (--queue: 503, counted as rejected), a long stream read only after its
# generation ended (events formatted as the client reads), and the write timeout (a client that never reads its
# stream is cut and its generation cancelled); 64 slow senders and a
# non-reader do not change or hold up a normal client's answer.
source "$(dirname "$0")/lib.sh"
fail() { echo "FAIL: $*"; echo "--- server log"; tail -20 "$SERVER_LOG"; exit 1; }
PY=/usr/bin/python3
M=(-m models/fixture-target.gguf -t 1 -c 4096 --parallel 1)

start_server "${M[@]}" --max-prompt 64 --max-tokens 8 --max-body 4096
$PY tests/server/limits_client.py tokens "$BASE" || fail "tokens"
head -c 5000 /dev/zero | tr '\0' 'a' > "$TMP/big"
code=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/v1/chat/completions" --data-binary "@$TMP/big")
[ "$code" = 413 ] || fail "a 5000-byte body: $code, want 413"
curl -s "$BASE/metrics" | grep -q '^specdec_refused_total{reason="body_size"} 1$' || fail "413 not counted"
echo "ok  413 over --max-body, counted"
stop_server "$SERVER_PID"

start_server "${M[@]}" --request-timeout 2
$PY tests/server/limits_client.py slow "$BASE" || fail "slow"
stop_server "$SERVER_PID"

start_server "${M[@]}" --max-conns-per-ip 4 --max-conns 6
$PY tests/server/limits_client.py conns "$BASE" || fail "conns"
stop_server "$SERVER_PID"

start_server "${M[@]}" --queue 1 --cache-ram 0
$PY tests/server/limits_client.py late "$BASE" || fail "late"
$PY tests/server/limits_client.py queue "$BASE" || fail "queue"
stop_server "$SERVER_PID"

# Two slots: the non-reader's generation holds one until it is cut, the normal client gets the other.
start_server -m models/fixture-target.gguf -t 1 -c 4096 --parallel 2 --max-conns-per-ip 100 --write-timeout 0.5
$PY tests/server/limits_client.py crowd "$BASE" || fail "crowd"
stop_server "$SERVER_PID"
