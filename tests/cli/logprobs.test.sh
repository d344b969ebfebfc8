#!/usr/bin/env bash
# specdec generate --logprobs N on the fixture pair: --json gets one entry per
# generated token (the token, its text, its log-probability and N
# alternatives, most likely first); the values are bitwise the same with
# speculation (auto: n-gram + draft) and without, greedy and seeded sampling
# with penalties; at greedy the chosen token is the first alternative; they
# equal the server's /v1/completions logprobs for the same request; without
# --json stdout is exactly the text of a run without --logprobs and stderr
# holds one line per token. Out-of-range values are a usage error.
source "$(dirname "$0")/../server/lib.sh"
PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "SKIPPED: python3 not found (missing package python3)"; exit 77; }
T=models/fixture-target.gguf D=models/fixture-draft.gguf
prompt=$'def parse(path):\n    """Read the file at path and return its lines."""\n'
n=24
[ -n "${SD_ASAN:-}" ] && n=8
gen() { "$BIN" generate -m "$T" -p "$prompt" -n $n -t 1 --no-check "$@" 2>"$TMP/err"; }
pen=(--presence-penalty 0.5 --frequency-penalty 0.3 --repeat-penalty 1.2)
gen --spec auto -md "$D" --logprobs 3 --json >"$TMP/g_spec.json" || { cat "$TMP/err"; exit 1; }
gen --spec none --logprobs 3 --json >"$TMP/g_none.json" || { cat "$TMP/err"; exit 1; }
gen --spec auto -md "$D" --temp 0.8 --seed 5 "${pen[@]}" --logprobs 5 --json >"$TMP/s_spec.json" || exit 1
gen --spec none --temp 0.8 --seed 5 "${pen[@]}" --logprobs 5 --json >"$TMP/s_none.json" || exit 1
gen --spec none >"$TMP/plain.txt" || exit 1
gen --spec none --logprobs 2 >"$TMP/lp.txt" || exit 1
cp "$TMP/err" "$TMP/lp.err"
cmp -s "$TMP/plain.txt" "$TMP/lp.txt" || { echo "FAIL: --logprobs changed stdout"; exit 1; }
"$BIN" generate -m "$T" -p x --logprobs 21 >/dev/null 2>"$TMP/bad.err" && { echo "FAIL: --logprobs 21 accepted"; exit 1; }
grep -q -- "--logprobs 21: out of range \[0, 20\]" "$TMP/bad.err" || { echo "FAIL: $(cat "$TMP/bad.err")"; exit 1; }

start_server -m "$T" -t 1 --parallel 1
"$PY" - "$BASE" "$TMP" "$n" "$prompt" <<'EOF' || exit 1
import json, struct, sys, urllib.request
base, tmp, n, prompt = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
load = lambda name: json.load(open("%s/%s.json" % (tmp, name)))
f32 = lambda x: struct.unpack("f", struct.pack("f", x))[0]
bad = 0
def check(ok, what):
    global bad
    if not ok:
        print("FAIL:", what)
        bad += 1
for kind, k in (("g", 3), ("s", 5)):
    a, b = load(kind + "_spec"), load(kind + "_none")
    check(a["logprobs"] == b["logprobs"], "%s: logprobs differ with speculation on and off" % kind)
    check(a["tokens"] == b["tokens"], "%s: tokens differ with speculation on and off" % kind)
    lp = a["logprobs"]
    check(len(lp) == a["n_gen"] == len(a["tokens"]), "%s: %d entries for %d tokens" % (kind, len(lp), a["n_gen"]))
    check([e["token"] for e in lp] == a["tokens"], "%s: entries are not the generated tokens" % kind)
    check("".join(e["text"] for e in lp) == a["text"], "%s: texts do not join to the output" % kind)
    for e in lp:
        tops = [t["logprob"] for t in e["top_logprobs"]]
        check(len(tops) == k and tops == sorted(tops, reverse=True) and e["logprob"] <= 0,
              "%s: bad entry %r" % (kind, e))
        check(e["logprob"] <= tops[0], "%s: chosen token above the most likely %r" % (kind, e))
        if kind == "g":
            check(e["top_logprobs"][0]["token"] == e["token"], "greedy: chosen token is not the most likely %r" % e)
# The server's completions for the same greedy request.
body = {"prompt": prompt, "max_tokens": n, "temperature": 0, "logprobs": 3}
req = urllib.request.Request(base + "/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
srv = json.load(urllib.request.urlopen(req, timeout=600))["choices"][0]["logprobs"]
ours = load("g_none")["logprobs"]
check([f32(x) for x in srv["token_logprobs"]] == [f32(e["logprob"]) for e in ours], "logprobs differ from the server's")
check(srv["tokens"] == [e["text"] for e in ours], "tokens differ from the server's")
check([{t: f32(v) for t, v in d.items()} for d in srv["top_logprobs"]] ==
      [{t["text"]: f32(t["logprob"]) for t in e["top_logprobs"]} for e in ours], "alternatives differ from the server's")
lines = [l for l in open(tmp + "/lp.err") if l[:5].strip().isdigit()]
check(len(lines) == n and all("| top: " in l for l in lines), "text mode: %d token lines on stderr" % len(lines))
sys.exit(bad)
EOF
stop_server "$SERVER_PID"
echo "logprobs.test.sh: all checks passed"
