#!/usr/bin/env bash
# specdec bench's hybrid tables on the qwen35 fixture pair: rollback (every
# discipline), the window S/K sweep (only K < S, every row lossless, at least
# one forward per round), the gate at α = 0 (every drafter lossless, nothing
# accepted; the target's MTP head has a row), the draft A/B table (the hybrid draft against its Q4_K copy);
# markdown and JSON agree on the rows. No speed assertions.
set -euo pipefail
export OMP_WAIT_POLICY=passive
bin="${SD_SPECDEC_BIN:?}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/prompts"
printf 'class: code\nint main(void) { return 0; }\nint main(void) {' > "$tmp/prompts/a.txt"

"$bin" bench -m "$root/models/fixture-q35-target.gguf" -md "$root/models/fixture-q35-draft.gguf" \
  --prompts "$tmp/prompts" -n 20 --reps 1 -k 4 --alphas 0.7 --tables rollback,window,gate \
  --windows 5,9 --ks 2,4,8 --window-alpha 0.6 --json "$tmp/b.json" > "$tmp/out.md" 2> "$tmp/err.txt"
for h in "## Hybrid rollback" "## Window discipline S/K sweep (oracle drafter, α = 0.60" "## Gated speculation at α ≈ 0"; do
  grep -qF "$h" "$tmp/out.md" || { echo "missing '$h' in the tables"; cat "$tmp/out.md"; exit 1; }
done
# markdown rows of the window table: S K ms/token ... LOSSLESS 1/1
awk '/^## Window/{w=1} /^## Gated/{w=0} w && /^\| [0-9]/' "$tmp/out.md" > "$tmp/win.md"
[ "$(wc -l < "$tmp/win.md")" -eq 5 ] || { echo "window table: want 5 rows (K < S)"; cat "$tmp/out.md"; exit 1; }
grep -vq '| 1/1 |$' "$tmp/win.md" && { echo "window table: a row is not lossless"; cat "$tmp/win.md"; exit 1; }

python3 - "$tmp/b.json" <<'PY'
import json, math, sys
j = json.load(open(sys.argv[1]))
rb = j["rollback"]
assert sorted(r["discipline"] for r in rb) == ["checkpoint", "redecode", "replay", "window"], rb
for r in rb:
    assert r["lossless_ok"] == r["lossless_n"] == 1, r
    assert r["forwards_per_round"] >= 1, r
for r in rb:  # checkpoint and replay never run the target twice in a round
    if r["discipline"] in ("checkpoint", "replay"):
        assert r["forwards_per_round"] == 1, r
w = j["window"]
assert w["alpha"] == 0.6 and w["prompt"] == "a", w
assert [(r["S"], r["K"]) for r in w["rows"]] == [(5, 2), (5, 4), (9, 2), (9, 4), (9, 8)], w["rows"]
for r in w["rows"]:
    assert r["lossless_ok"] == r["lossless_n"] == 1, r
    assert r["forwards_per_round"] >= 1 and r["ms_per_token"] > 0 and math.isfinite(r["speedup"]), r
    assert abs(r["ms_per_token"] * r["tok_s"] - 1000) < 1e-6 * 1000, r
    assert 0 <= r["accepted_per_round"] <= r["K"], r
g = j["gate"]
names = [r["drafter"] for r in g["rows"]]
assert names == ["oracle(α=0)", "oracle(α=0) at draft cost", "draft", "mtp"], names  # the fixture has an MTP block
for r in g["rows"]:
    assert r["lossless_ok"] == r["lossless_n"] == 1, r
    assert r["speedup"] > 0 and r["rounds"] >= 0 and r["draft_redecoded"] >= 0, r
    # the time breakdown: a drafter's and the rounds' time, the plain-step pace, the in-run overhead
    assert r["drafter_ms"] >= 0 and r["step_ms"] > 0 and math.isfinite(r["overhead"]), r
    assert (r["rounds_ms"] > 0) == (r["rounds"] > 0), r
assert g["greedy_step_ms"] > 0, g
for r in g["rows"][:2]:  # the oracle at α = 0 never proposes the right token
    assert r["alpha"] in (None, 0.0), r
PY

# the ab table: draft A = the fixture draft, B = its Q4_K copy (smaller weights, same vocabulary)
"$bin" quantize "$root/models/fixture-q35-draft.gguf" "$tmp/d4.gguf" q4_k > /dev/null
"$bin" bench -m "$root/models/fixture-q35-target.gguf" -md "$root/models/fixture-q35-draft.gguf" --draft-b "$tmp/d4.gguf" \
  --prompts "$tmp/prompts" -n 20 --reps 2 -k 4 --alphas 0.5,0.9 --tables ab --json "$tmp/ab.json" > "$tmp/ab.md" 2> "$tmp/err.txt"
grep -qF "## Draft A/B (K = 4 fixed, gate off" "$tmp/ab.md" || { echo "missing the ab table"; cat "$tmp/ab.md"; exit 1; }
[ "$(grep -c '^| [AB] |' "$tmp/ab.md")" -eq 2 ] || { echo "ab table: want rows A and B"; cat "$tmp/ab.md"; exit 1; }
python3 - "$tmp/ab.json" "$tmp/d4.gguf" <<'PY'
import json, math, sys
ab = json.load(open(sys.argv[1]))["ab"]
rows = ab["rows"]
assert [r["draft"] for r in rows] == ["A", "B"] and rows[1]["file"] == sys.argv[2], rows
assert rows[0]["file"].endswith("models/fixture-q35-draft.gguf"), rows[0]["file"]
assert rows[1]["weight_mb"] < rows[0]["weight_mb"], "the Q4_K copy must hold fewer weight bytes"
assert ab["K"] == 4 and ab["greedy_tok_s"] > 0 and ab["target_step_ms"] > 0, ab
ok = lambda x: x is not None and math.isfinite(x) and x > 0
for r in rows:
    assert ok(r["step_ms"]) and ok(r["r"]), r
    assert [c["alpha"] for c in r["oracle"]] == [0.5, 0.9], r["oracle"]
    for c in r["oracle"] + [r["draft_itself"]]:
        assert ok(c["speedup"]) and ok(c["tok_s"]), c
        assert c["lossless_ok"] == c["lossless_n"] == 2, c
    assert "alpha" not in r["draft_itself"] and 0 <= r["draft_itself"]["alpha_measured"] <= 1, r["draft_itself"]
# the same oracle (seed, α) in A and B: the same drafts accepted, only the cost differs
for a, b in zip(rows[0]["oracle"], rows[1]["oracle"]):
    assert a["accepted_per_round"] == b["accepted_per_round"], (a, b)
assert all(ok(x) for x in ab["b_over_a_tok_s"]["oracle"] + [ab["b_over_a_tok_s"]["draft_itself"]]), ab["b_over_a_tok_s"]
PY

set +e
"$bin" bench -m "$root/models/fixture-q35-target.gguf" -md "$root/models/fixture-q35-draft.gguf" --tables ab 2> "$tmp/e4"; rc4=$?
"$bin" bench -m "$root/models/fixture-q35-target.gguf" --draft-b "$tmp/d4.gguf" 2> "$tmp/e5"; rc5=$?
set -e
[ $rc4 -eq 2 ] && [ $rc5 -eq 2 ] || { echo "ab option errors: exit codes $rc4 $rc5"; exit 1; }
grep -q '^specdec: --tables ab needs -md and --draft-b' "$tmp/e4" || { cat "$tmp/e4"; exit 1; }

set +e
"$bin" bench -m "$root/models/fixture-q35-target.gguf" --windows 1 2> "$tmp/e1"; rc1=$?
"$bin" bench -m "$root/models/fixture-q35-target.gguf" --ks 4,17 2> "$tmp/e2"; rc2=$?
"$bin" bench -m "$root/models/fixture-q35-target.gguf" --window-alpha 1.5 2> "$tmp/e3"; rc3=$?
set -e
[ $rc1 -eq 2 ] && [ $rc2 -eq 2 ] && [ $rc3 -eq 2 ] || { echo "exit codes $rc1 $rc2 $rc3"; exit 1; }
for f in e1 e2 e3 e4 e5; do
  [ "$(wc -l < "$tmp/$f")" -eq 1 ] && grep -q '^specdec: ' "$tmp/$f" || { echo "$f:"; cat "$tmp/$f"; exit 1; }
done
echo "bench hybrid ok"
