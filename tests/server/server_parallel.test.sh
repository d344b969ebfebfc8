#!/usr/bin/env bash
# specdec serve --parallel 4: requests fired together (streaming and not,
# temperature 0 and 0.8 with seeds, speculation on) are served in batched
# steps, and each answer is byte for byte the one a --parallel 1 server (one
# slot: each request alone) gives the same request; on the dense fixture with
# its draft model and on the qwen35 hybrid (n-gram + its MTP block). Then 8
# requests on 4 slots: the later ones join as slots free up, while a ninth
# client leaves mid-stream (its request is cancelled; nothing else changes).
source "$(dirname "$0")/lib.sh"
fail() { echo "FAIL: $*"; echo "--- server log"; tail -20 "$SERVER_LOG"; exit 1; }

# fire BASE OUT I...: requests I... at once (request i: prompt i, streamed
# when i is odd, temperature 0.8 with seed 100+i when i % 4 >= 2, else 0);
# answer i to OUT.i
fire() {
  /usr/bin/python3 - "$@" <<'PY'
import json, sys, threading, urllib.request
base, out, ids = sys.argv[1], sys.argv[2], [int(a) for a in sys.argv[3:]]
prompts = ["Once upon a time there was a little", "The cat sat on the mat. The cat sat on the",
           "One, two, three, four, five, six,", "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n",
           "Tom and Lily went to the park. Tom and Lily", "A B C D E F G",
           "She said hello. He said hello. They said", "Lily liked to play. Lily liked to"]
errors = []
def leave():  # a long stream whose client goes away after a few pieces
    body = {"prompt": prompts[0], "max_tokens": 200, "stream": True, "temperature": 0}
    req = urllib.request.Request(base + "/v1/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    r = urllib.request.urlopen(req, timeout=300)
    for k, line in enumerate(r):
        if k >= 4: break
    r.close()
def one(i):
    if i == 8: return leave()
    try:
        body = {"prompt": prompts[i], "max_tokens": 24 + 4 * (i % 3), "stream": i % 2 == 1}
        body.update(temperature=0.8, seed=100 + i) if i % 4 >= 2 else body.update(temperature=0)
        req = urllib.request.Request(base + "/v1/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        text = ""
        with urllib.request.urlopen(req, timeout=300) as r:
            if body["stream"]:
                for line in r:
                    line = line.decode().strip()
                    if line.startswith("data: ") and line != "data: [DONE]":
                        text += json.loads(line[6:])["choices"][0]["text"]
            else:
                text = json.load(r)["choices"][0]["text"]
        open("%s.%d" % (out, i), "w").write(text)
    except Exception as e:
        errors.append("request %d: %s" % (i, e))
ts = [threading.Thread(target=one, args=(i,)) for i in ids]
for t in ts: t.start()
for t in ts: t.join()
if errors: sys.exit("; ".join(errors))
PY
}

check() { # MODEL-ARGS...
  start_server "$@" -t 1 -c 512 --parallel 1
  local one=$BASE one_pid=$SERVER_PID
  start_server "$@" -t 2 -c 512 --parallel 4 --queue 16
  local par=$BASE par_pid=$SERVER_PID
  grep -q "parallel 4" "$SERVER_LOG" || fail "the server does not say parallel 4"
  local i
  for i in $(seq 0 7); do fire "$one" "$TMP/ref" "$i" || fail "reference request $i failed"; done
  fire "$par" "$TMP/got4" 0 1 2 3 || fail "the 4 concurrent requests failed"
  fire "$par" "$TMP/got8" 0 1 2 3 4 5 6 7 8 || fail "the 8 concurrent requests (and one leaving) failed"
  for i in $(seq 0 7); do
    [ -s "$TMP/ref.$i" ] || fail "empty reference answer $i"
    if [ "$i" -lt 4 ]; then
      cmp -s "$TMP/ref.$i" "$TMP/got4.$i" ||
        fail "$*: request $i differs served with 3 others: alone '$(cat "$TMP/ref.$i")' batch '$(cat "$TMP/got4.$i")'"
    fi
    cmp -s "$TMP/ref.$i" "$TMP/got8.$i" ||
      fail "$*: request $i of 8 on 4 slots differs: alone '$(cat "$TMP/ref.$i")' batch '$(cat "$TMP/got8.$i")'"
  done
  curl -sf "$par/health" > /dev/null || fail "the --parallel 4 server is not healthy after the batches"
  fire "$par" "$TMP/after" 1 || fail "a request after the batches failed"
  cmp -s "$TMP/ref.1" "$TMP/after.1" || fail "$*: the request after the batches differs from alone"
  stop_server "$par_pid"
  stop_server "$one_pid"
}

check -m models/fixture-target.gguf -md models/fixture-draft.gguf
check -m models/fixture-q35-target.gguf
echo "server_parallel: 4 and 8 concurrent requests on --parallel 4 equal each served alone (dense + draft, qwen35)"
