#!/usr/bin/env bash
# specdec bench smoke test: a tiny random qwen3 target + draft (sd-genmodel),
# every table, JSON and SVG present; every speculative run lossless (the
# engine is batch-invariant, so spec output must equal greedy output). No
# speed assertions: the machine is shared.
set -euo pipefail
# Threads sleep instead of spinning while they wait: on a loaded shared
# machine spinning OpenMP threads make this test 20x slower (no effect on results).
export OMP_WAIT_POLICY=passive
bin="${SD_SPECDEC_BIN:?}"; gen="${SD_BUILD_DIR:?}/sd-genmodel"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$gen" --shape tiny --type q8_0 --seed 1 -o "$tmp/t.gguf" 2>/dev/null
"$gen" --shape tiny --type q8_0 --seed 2 -o "$tmp/d.gguf" 2>/dev/null
mkdir "$tmp/prompts"
# short prompts keep the test fast (the tiny model still scores 151936 logits per row)
printf 'class: code\nint main(void) { return 0; }\nint main(void) {' > "$tmp/prompts/a.txt"
printf 'class: repeat\nred green blue red green blue red green' > "$tmp/prompts/b.txt"
printf 'A prompt whose class comes from its file name.\n' > "$tmp/prompts/free-x.txt"

"$bin" bench -m "$tmp/t.gguf" -md "$tmp/d.gguf" --prompts "$tmp/prompts" -n 8 --reps 1 -k 4 --membw-mb 16 \
  --json "$tmp/b.json" --plot "$tmp/b.svg" > "$tmp/out.md" 2> "$tmp/err.txt"
for h in "## Per prompt class" "## Verify cost c_v(S)" "roofline:" "## K sweep" "## Synthetic acceptance"; do
  grep -qF "$h" "$tmp/out.md" || { echo "missing '$h' in the tables"; cat "$tmp/out.md"; exit 1; }
done
grep -q "bench: done" "$tmp/err.txt" || { echo "no progress line on stderr"; exit 1; }
head -c 4 "$tmp/b.svg" | grep -q "<svg" || { echo "plot is not SVG"; exit 1; }

python3 - "$tmp/b.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
classes = {c["prompt"]: c for c in j["classes"]}
assert set(classes) == {"a", "b", "free-x"}, classes.keys()
assert classes["a"]["class"] == "code" and classes["b"]["class"] == "repeat" and classes["free-x"]["class"] == "free"
for c in j["classes"]:
    assert set(c["drafters"]) == {"ngram", "draft", "auto"}, c["drafters"].keys()
    for name, d in c["drafters"].items():
        for f in ("spec_tok_s", "speedup", "alpha", "accepted_per_round", "tokens_per_target_forward"):
            assert f in d, (name, f)
        assert d["lossless_n"] == 1 and d["lossless_ok"] == 1, (c["prompt"], name, "not lossless")
cv = j["cv"]
assert [p["S"] for p in cv["curve"]] == list(range(1, 18))
assert cv["curve"][0]["c_v"] == 1.0
assert cv["roofline"]["weight_bytes"] > 10_000_000 and cv["r"] is not None
rows = j["ksweep"]["rows"]
assert [r["K"] for r in rows] == list(range(1, 17)) and j["ksweep"]["drafter"] == "draft"
assert all(r["lossless_ok"] == r["lossless_n"] == 1 for r in rows)
o = j["oracle"]
assert [r["alpha"] for r in o["rows"]] == [0.5, 0.7, 0.9] and o["K"] == 4
assert all(r["lossless_ok"] == r["lossless_n"] == 1 for r in o["rows"])
# predictions follow ARCHITECTURE.md §2: E(α,K) = (1 − α^(K+1)) / (1 − α); oracle: E / c_v(K+1)
E = lambda a, k: (1 - a ** (k + 1)) / (1 - a)
cvk = {p["S"]: p["c_v"] for p in cv["curve"]}
for r in o["rows"]:
    want = E(r["alpha"], 4) / cvk[5]
    assert abs(r["predicted_speedup"] - want) < 1e-6 * want, (r, want)
# K sweep: the fitted α reproduces the measured accepted/round; prediction uses r and c_v(K+1)
for r in rows:
    k, acc, a = r["K"], r["accepted_per_round"], r["alpha_fit"]
    if 0 < acc < k:
        assert abs(E(a, k) - 1 - acc) < 1e-6, r
    want = E(a, k) / (k * cv["r"] + cvk[k + 1]) if a < 1 else (k + 1) / (k * cv["r"] + cvk[k + 1])
    assert abs(r["predicted_speedup"] - want) < 1e-6 * want, (r, want)
PY

# the qwen35 fixture's MTP block: the mtp drafter in the class table (auto picks it), its head step
# time, and the oracle's column at the MTP head's cost; every run lossless
root="$(cd "$(dirname "$0")/../.." && pwd)"
"$bin" bench -m "$root/models/fixture-q35-target.gguf" --prompts "$tmp/prompts" -n 8 --reps 1 -k 4 --membw-mb 16 \
  --tables classes,oracle --drafters ngram,mtp,auto --fixed-k --gate 0 --json "$tmp/m.json" > "$tmp/m.md" \
  2> "$tmp/err.txt" || { cat "$tmp/err.txt"; exit 1; }
grep -q "MTP head step" "$tmp/m.md" && grep -q "at MTP head cost" "$tmp/m.md" &&
  grep -q "fixed K = 4, hit-rate gate off" "$tmp/m.md" || { cat "$tmp/m.md"; exit 1; }
python3 - "$tmp/m.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for c in j["classes"]:
    assert set(c["drafters"]) == {"ngram", "mtp", "auto"}, c["drafters"].keys()
    assert c["drafters"]["mtp"]["tokens_per_target_forward"] > 1, c  # gate off: the head drafts every round
    for name, d in c["drafters"].items():
        assert d["lossless_n"] == 1 and d["lossless_ok"] == 1, (c["prompt"], name, "not lossless")
assert j["cv"]["head_step_ms"] > 0 and j["cv"]["r_head"] > 0, j["cv"]
o = j["oracle"]["rows"]
assert all(r["speedup_at_head_cost"] is not None and r["speedup_at_draft_cost"] is None for r in o), o
assert all(r["lossless_ok"] == r["lossless_n"] == 1 for r in o)
PY

# --temp 0.7 --seeds: each rep samples with its own seed, and each drafter's output must equal plain
# sampling with that seed (a reference kept from the first seed would fail reps 2 and 3). The trained
# fixture pair drafts and accepts.
"$bin" bench -m "$root/models/fixture-target.gguf" -md "$root/models/fixture-draft.gguf" --prompts "$tmp/prompts" \
  -n 16 --reps 3 -k 4 --tables classes --drafters ngram,draft --temp 0.7 --seeds 5,6,7 --json "$tmp/s.json" \
  > "$tmp/s.md" 2> "$tmp/err.txt" || { cat "$tmp/err.txt"; exit 1; }
grep -q "Sampling at temperature 0.7, seeds 5, 6, 7" "$tmp/s.md" || { cat "$tmp/s.md"; exit 1; }
grep -q "sampled rep" "$tmp/err.txt" || { echo "no 'sampled rep' progress"; cat "$tmp/err.txt"; exit 1; }
python3 - "$tmp/s.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["temp"] == 0.7 and j["seeds"] == [5, 6, 7], (j["temp"], j["seeds"])
acc = 0
for c in j["classes"]:
    assert 0 <= c["loop_share"] <= 1, c
    for name, d in c["drafters"].items():
        assert d["lossless_n"] == 3 and d["lossless_ok"] == 3, (c["prompt"], name, "not lossless per seed")
        acc += d["accepted_per_round"]
assert acc > 0, "no draft token accepted at temperature 0.7"
PY

# --greedy-ids: n ids, the same as the first ids of a longer run (greedy is a prefix property)
a=$("$bin" bench -m "$tmp/t.gguf" --greedy-ids "Hello world" -n 6)
b=$("$bin" bench -m "$tmp/t.gguf" --greedy-ids "Hello world" -n 9)
[ "$(echo "$a" | wc -w)" -eq 6 ] || { echo "--greedy-ids: want 6 ids, got '$a'"; exit 1; }
[ "$(echo "$b" | cut -d' ' -f1-6)" = "$a" ] || { echo "--greedy-ids: '$a' is not a prefix of '$b'"; exit 1; }

# usage and runtime errors: exit 2 / 1, one line on stderr
set +e
"$bin" bench -m "$tmp/t.gguf" --seed 1x 2> "$tmp/e1"; rc1=$?
"$bin" bench -m "$tmp/t.gguf" --tables bogus 2> "$tmp/e2"; rc2=$?
"$bin" bench -m "$tmp/nope.gguf" --prompts "$tmp/prompts" 2> "$tmp/e3"; rc3=$?
"$bin" bench -m "$tmp/t.gguf" --prompts "$tmp/empty-dir" 2> "$tmp/e4"; rc4=$?
"$bin" bench -m "$tmp/t.gguf" --temp -1 2> "$tmp/e5"; rc5=$?
"$bin" bench -m "$tmp/t.gguf" --seeds 1,,x 2> "$tmp/e6"; rc6=$?
# the options bench shares with generate go through the option table: its ranges and messages
"$bin" bench -m "$tmp/t.gguf" -t 2000 2> "$tmp/e7"; rc7=$?
"$bin" bench -m "$tmp/t.gguf" -n 1 2> "$tmp/e8"; rc8=$?
set -e
grep -qF -- '-t 2000: out of range [0, 1024]' "$tmp/e7" || { echo "e7:"; cat "$tmp/e7"; exit 1; }
[ $rc1 -eq 2 ] && [ $rc2 -eq 2 ] && [ $rc3 -eq 1 ] && [ $rc4 -eq 1 ] && [ $rc5 -eq 2 ] && [ $rc6 -eq 2 ] &&
  [ $rc7 -eq 2 ] && [ $rc8 -eq 2 ] || { echo "exit codes $rc1 $rc2 $rc3 $rc4 $rc5 $rc6 $rc7 $rc8"; exit 1; }
for f in e1 e2 e3 e4 e5 e6 e7 e8; do
  [ "$(wc -l < "$tmp/$f")" -eq 1 ] && grep -q '^specdec: ' "$tmp/$f" || { echo "$f:"; cat "$tmp/$f"; exit 1; }
done
"$bin" bench --help | grep "usage: specdec bench" >/dev/null
echo "bench ok"
