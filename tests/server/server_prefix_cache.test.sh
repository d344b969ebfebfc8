#!/usr/bin/env bash
# The prefix cache over many conversations (--cache-ram): 4 conversations
# interleaved turn by turn, on the dense and the hybrid fixtures. Turn 2 and
# later of each reuse a saved state (cache_n > 0, after the other three ran
# in between), and every answer is bitwise the answer of a server without the
# cache (greedy and seeded sampling). With a budget of about two states the
# cache stays under it, counts evictions in /metrics, and the answers still
# match. One slot (--parallel 1, whatever the machine's default): with more,
# each conversation keeps its slot and its KV rows without the cache too
# (server_parallel_cache.test.sh checks the cache shared by 4 slots).
source "$(dirname "$0")/lib.sh"
fail() { echo "FAIL: $*"; echo "--- server log"; tail -20 "$SERVER_LOG"; exit 1; }
metric() { curl -sf "$BASE/metrics" | sed -n "s/^specdec_prefix_cache_$1 //p"; }

run_fixture() { # NAME SERVE-ARGS...
  local name=$1; shift
  start_server "$@" --cache-ram 0
  python3 tests/server/conversations.py "$BASE" 4 3 "$TMP/$name.cold.json" || fail "$name: cold run"
  stop_server "$SERVER_PID"
  start_server "$@" --cache-ram 64
  python3 tests/server/conversations.py "$BASE" 4 3 "$TMP/$name.warm.json" || fail "$name: cached run"
  [ "$(metric hits_total)" -ge 8 ] || fail "$name: $(metric hits_total) cache hits, want >= 8"
  # A budget of about two states (from the states this run stored: their size
  # depends on the answers' length, shorter under the sanitizers): the 8 or
  # more states of the next run must evict, and never exceed it.
  local small
  small=$(python3 -c "b, e = $(metric bytes), $(metric entries); print('%.4f' % (2 * b / e / 1048576))") ||
    fail "$name: no cache metrics"
  stop_server "$SERVER_PID"
  start_server "$@" --cache-ram $small
  python3 tests/server/conversations.py "$BASE" 4 2 "$TMP/$name.small.json" || fail "$name: small-cache run"
  local bytes cap ev
  bytes=$(metric bytes); cap=$(metric capacity_bytes); ev=$(metric evictions_total)
  [ "$bytes" -le "$cap" ] || fail "$name: cache holds $bytes bytes over its budget $cap"
  [ "$ev" -gt 0 ] || fail "$name: no evictions with a budget of $small MiB (holds $bytes bytes)"
  stop_server "$SERVER_PID"
  python3 - "$TMP/$name.cold.json" "$TMP/$name.warm.json" "$TMP/$name.small.json" "$name" <<'PY' || fail "$name: see above"
import json, sys
cold, warm, small = (json.load(open(p)) for p in sys.argv[1:4])
name = sys.argv[4]
assert len(cold) == len(warm) == 12 and len(small) == 8
for c, w in zip(cold, warm):
    assert c["answer"] == w["answer"], "%s conv %d turn %d: cached %r, cold %r" % (name, c["conv"], c["turn"], w["answer"], c["answer"])
    if w["turn"] > 0:
        assert w["cache_n"] > 0, "%s conv %d turn %d: cache_n 0" % (name, w["conv"], w["turn"])
        # interleaved: the previous request was another conversation's, so only the cache can give this much
        assert w["cache_n"] > c["cache_n"], "%s conv %d turn %d: cache_n %d, no better than without the cache (%d)" % (name, w["conv"], w["turn"], w["cache_n"], c["cache_n"])
for c, s in zip(cold, small):
    assert c["answer"] == s["answer"], "%s small cache conv %d turn %d differs" % (name, c["conv"], c["turn"])
print("ok  %s: turn 2+ cache_n %s; answers equal to the cache-less server's" % (name, [w["cache_n"] for w in warm if w["turn"] > 0]))
PY
}

run_fixture dense -m models/fixture-target.gguf -md models/fixture-draft.gguf -t 1 -c 2048 --parallel 1
run_fixture hybrid -m models/fixture-q35-target.gguf -t 1 -c 2048 --parallel 1
echo "prefix cache: ok"
