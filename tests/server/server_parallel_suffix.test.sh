#!/usr/bin/env bash
# The suffix memory (--suffix-tokens) shared by the slots of --parallel 2 and
# 4: 4 requests fired at once (greedy and seeded sampling, --spec suffix), then
# the same 4 again at once (retries). Every answer is byte for byte the one a
# --parallel 1 server without a memory gives the request alone (lossless),
# and the retries draft from the first answers: more draft tokens accepted
# (timings.draft_n_accepted) than the first time. Fixed K, gate off: the
# drafting does not depend on timings.
source "$(dirname "$0")/lib.sh"
fail() { echo "FAIL: $*"; echo "--- server log"; tail -20 "$SERVER_LOG"; exit 1; }

# fire BASE OUT I...: requests I... at once; OUT.i gets answer i, OUT.i.acc its accepted draft tokens
fire() {
  /usr/bin/python3 - "$@" <<'PY'
import json, os, sys, threading, urllib.request
base, out, ids = sys.argv[1], sys.argv[2], [int(a) for a in sys.argv[3:]]
prompts = ["def add(a, b):\n    return a + b\n\ndef mul(a, b):", "Once upon a time there was a little",
           "import os\nfor f in os.listdir('.'):", "The cat sat on the mat. The dog"]
n = 16 if os.environ.get("SD_ASAN") else 40
errors = []
def one(i):
    try:
        body = {"prompt": prompts[i], "max_tokens": n, "temperature": 0}
        if i % 2: body.update(temperature=0.8, seed=50 + i)
        req = urllib.request.Request(base + "/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=300) as r:
            o = json.load(r)
        open("%s.%d" % (out, i), "w").write(o["choices"][0]["text"])
        open("%s.%d.acc" % (out, i), "w").write(str(o["timings"]["draft_n_accepted"]))
    except Exception as e:
        errors.append("request %d: %s" % (i, e))
ts = [threading.Thread(target=one, args=(i,)) for i in ids]
for t in ts: t.start()
for t in ts: t.join()
if errors: sys.exit("; ".join(errors))
PY
}
sum_acc() { local f s=0; for f in "$TMP/$1".?.acc; do s=$((s + $(cat "$f"))); done; echo $s; }

ARGS=(-m models/fixture-target.gguf -c 512 --spec suffix --fixed-k --gate 0 --draft-max 8)
start_server "${ARGS[@]}" -t 1 --parallel 1 --suffix-tokens 0
for i in 0 1 2 3; do fire "$BASE" "$TMP/ref" $i || fail "reference request $i failed"; done
stop_server "$SERVER_PID"
for p in 2 4; do
  start_server "${ARGS[@]}" -t 2 --parallel $p --suffix-tokens 4096
  fire "$BASE" "$TMP/first$p" 0 1 2 3 || fail "--parallel $p: the first 4 requests failed"
  fire "$BASE" "$TMP/retry$p" 0 1 2 3 || fail "--parallel $p: the 4 retries failed"
  stop_server "$SERVER_PID"
  for i in 0 1 2 3; do
    [ -s "$TMP/ref.$i" ] || fail "empty reference answer $i"
    for run in first retry; do
      cmp -s "$TMP/ref.$i" "$TMP/$run$p.$i" ||
        fail "--parallel $p $run: request $i differs: alone '$(cat "$TMP/ref.$i")', batched '$(cat "$TMP/$run$p.$i")'"
    done
  done
  a1=$(sum_acc first$p); a2=$(sum_acc retry$p)
  echo "--parallel $p: accepted $a1 draft tokens, then $a2 on the retries; answers equal to alone"
  [ "$a2" -gt "$a1" ] || fail "--parallel $p: the retries did not draft from the shared memory ($a1 -> $a2)"
done
echo "parallel suffix memory: ok"
