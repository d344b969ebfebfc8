#!/usr/bin/env bash
# The prefix cache (--cache-ram) shared by the slots of --parallel 4: the 4
# interleaved multi-turn conversations of server_prefix_cache run at once
# (one client thread each, its turns in order), on the dense fixture with
# its draft model and on the qwen35 hybrid (whose prompt checkpoints run as
# requests of their own in the batch). Turn 2 and later of each reuse a saved
# state (cache_n > 0; the cache counts the hits), turn 1 of each, sent at
# once to fresh slots and an empty cache, reuses at most the template's few
# shared tokens (cache_n < prompt_n: on the hybrid its own checkpoint is no hit), and every answer is byte
# for byte the answer of a cache-less --parallel 1 server playing the
# conversations one turn at a time. Then /metrics' requests_processing
# counts the slots generating now: above 1 while 4 streams run, 0 after.
# Slot affinity: without a cache, each conversation's next turn finds its
# last one in its slot.
source "$(dirname "$0")/lib.sh"
fail() { echo "FAIL: $*"; echo "--- server log"; tail -20 "$SERVER_LOG"; exit 1; }
metric() { curl -sf "$BASE/metrics" | sed -n "s/^specdec_$1 //p"; }

# together BASE OUT: the 4 conversations of conversations.py, 3 turns each, at once
together() {
  /usr/bin/python3 - "$@" <<'PY'
import json, sys, threading
sys.path.insert(0, "tests/server")
import conversations as cv
base, out = sys.argv[1], sys.argv[2]
res, errors = [], []
start = threading.Barrier(4)  # the first turns go out together, before any has stored a state
def conv(i):
    try:
        msgs = [{"role": "user", "content": cv.TOPICS[i]}]
        start.wait(timeout=60)
        for turn in range(3):
            o, _ = cv.chat(base, msgs, i)
            a = o["choices"][0]["message"]["content"]
            res.append({"conv": i, "turn": turn, "answer": a, "cache_n": o["timings"]["cache_n"],
                        "prompt_n": o["timings"]["prompt_n"]})
            msgs += [{"role": "assistant", "content": a}, {"role": "user", "content": "Tell me more, part %d." % (turn + 2)}]
    except Exception as e:
        errors.append("conversation %d: %s" % (i, e))
ts = [threading.Thread(target=conv, args=(i,)) for i in range(4)]
for t in ts: t.start()
for t in ts: t.join()
if errors: sys.exit("; ".join(errors))
json.dump(sorted(res, key=lambda r: (r["turn"], r["conv"])), open(out, "w"), indent=1)
PY
}

run_fixture() { # NAME SERVE-ARGS...
  local name=$1; shift
  start_server "$@" -t 1 --parallel 1 --cache-ram 0
  python3 tests/server/conversations.py "$BASE" 4 3 "$TMP/$name.ref.json" || fail "$name: reference run"
  stop_server "$SERVER_PID"
  start_server "$@" -t 2 --parallel 4 --cache-ram 64
  grep -q "parallel 4" "$SERVER_LOG" || fail "$name: the server does not say parallel 4"
  grep -q "note:" "$SERVER_LOG" && fail "$name: the server still notes a limit: $(grep note: "$SERVER_LOG")"
  together "$BASE" "$TMP/$name.par.json" || fail "$name: the 4 conversations at once failed"
  local hits
  hits=$(metric prefix_cache_hits_total)
  [ "$hits" -ge 8 ] || fail "$name: $hits cache hits on --parallel 4, want >= 8"
  stop_server "$SERVER_PID"
  python3 - "$TMP/$name.ref.json" "$TMP/$name.par.json" "$name" "$hits" <<'PY' || fail "$name: see above"
import json, sys
ref, par = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
name = sys.argv[3]
assert len(ref) == len(par) == 12, (len(ref), len(par))
for r, p in zip(ref, par):
    assert (r["conv"], r["turn"]) == (p["conv"], p["turn"])
    assert r["answer"] == p["answer"], "%s conv %d turn %d: --parallel 4 %r, alone %r" % (name, r["conv"], r["turn"], p["answer"], r["answer"])
    if p["turn"] > 0:
        assert p["cache_n"] > 0, "%s conv %d turn %d: cache_n 0 on --parallel 4" % (name, p["conv"], p["turn"])
    else:
        # Sent at once, first turns normally reuse nothing; one that arrives
        # after another finished may reuse the chat template's few shared
        # tokens, never most of its own prompt (the bug this guards: a
        # hybrid's checkpoint counted as reuse, cache_n = prompt - 1).
        assert p["cache_n"] < p["prompt_n"], "%s conv %d turn 1: cache_n %d, prompt_n %d on --parallel 4 (a first turn)" % (name, p["conv"], p["cache_n"], p["prompt_n"])
print("ok  %s --parallel 4: turn 1 cache_n %s, turn 2+ cache_n %s, %s hits; answers equal to a cache-less --parallel 1 server's" % (name, [p["cache_n"] for p in par if p["turn"] == 0], [p["cache_n"] for p in par if p["turn"] > 0], sys.argv[4]))
PY
}

run_fixture dense -m models/fixture-target.gguf -md models/fixture-draft.gguf -c 2048
run_fixture hybrid -m models/fixture-q35-target.gguf -c 2048

# Slot affinity, no cache (--cache-ram 0): the 4 conversations played one
# turn at a time, interleaved. Each turn goes to the slot that still holds
# its conversation's last turn (or, for a new one, the slot idle longest), so
# turn 2 and later reuse at least the whole previous prompt from the slot's
# own KV cache. Taking the lowest free slot every time (the old choice) put
# every request in slot 0, where the other conversations had overwritten it.
start_server -m models/fixture-target.gguf -md models/fixture-draft.gguf -c 2048 -t 2 --parallel 4 --cache-ram 0
python3 tests/server/conversations.py "$BASE" 4 3 "$TMP/affinity.json" || fail "affinity: the conversations"
stop_server "$SERVER_PID"
python3 - "$TMP/affinity.json" "$TMP/dense.ref.json" <<'PY' || fail "slot affinity: see above"
import json, sys
res, ref = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
prev = {}
for r, f in zip(res, ref):
    assert r["answer"] == f["answer"], "conv %d turn %d: answer differs from --parallel 1's" % (r["conv"], r["turn"])
    if r["turn"] > 0:
        want = prev[r["conv"]]
        assert r["cache_n"] >= want, "conv %d turn %d: cache_n %d, but its slot held the previous turn's %d prompt tokens" % (r["conv"], r["turn"] + 1, r["cache_n"], want)
    prev[r["conv"]] = r["prompt_n"]
print("ok  slot affinity, --parallel 4 --cache-ram 0: turn 2+ cache_n %s >= the previous prompt_n; answers equal" % [r["cache_n"] for r in res if r["turn"] > 0])
PY

# requests_processing while 4 streams run on 4 slots: polled every 20 ms
start_server -m models/fixture-target.gguf -t 2 -c 4096 --parallel 4
/usr/bin/python3 - "$BASE" <<'PY' || fail "requests_processing"
import json, sys, threading, time, urllib.request
sys.path.insert(0, "tests/server")
import conversations as cv
base = sys.argv[1]
n = cv.long_tokens(base, 1.5)
def stream(i):
    body = dict(cv.LONG, max_tokens=n, stream=True, seed=7 + i)
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        for _ in r: pass
def gauge():
    with urllib.request.urlopen(base + "/metrics", timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("specdec_requests_processing "): return float(line.split()[1])
ts = [threading.Thread(target=stream, args=(i,)) for i in range(4)]
for t in ts: t.start()
seen = []
while any(t.is_alive() for t in ts):
    seen.append(gauge())
    time.sleep(0.02)
for t in ts: t.join()
after = gauge()
top = max(seen)
assert 1 < top <= 4, "requests_processing at most %s while 4 streams ran (%d polls)" % (top, len(seen))
assert after == 0, "requests_processing %s after the streams" % after
print("ok  requests_processing reached %d during 4 streams of %d tokens, 0 after" % (top, n))
PY
stop_server "$SERVER_PID"
echo "parallel prefix cache: ok"
