#!/usr/bin/env bash
# specdec generate: flags, streaming text + stats line, --json fields, LOSSLESS
# with n-gram and a draft model, and the errors (bad flags -> 2; missing model,
# draft with another vocabulary, prompt longer than -c -> 1, one line each).
# Models: tiny random-weight qwen3 GGUFs from sd-genmodel (the fixture's vocabulary;
# the mismatched draft gets GPT-2's).
set -euo pipefail
bin=$(realpath "${SD_SPECDEC_BIN:?}") gen=${SD_BUILD_DIR:?}/sd-genmodel
. "${SD_SOURCE_DIR:?}/tests/support/checks.sh"

# The fixture's 4096-token vocabulary keeps the lm head small (fast under ASan);
# without the fixture, Qwen2's.
vocab=tests/data/tokenizer/ggml-vocab-qwen2.gguf
[ -r models/fixture-target.gguf ] && vocab=models/fixture-target.gguf
"$gen" --shape tiny --type q8_0 --seed 1 --vocab "$vocab" -o "$tmp/target.gguf" 2>/dev/null
"$gen" --shape tiny --type q8_0 --seed 2 --vocab "$vocab" -o "$tmp/draft.gguf" 2>/dev/null
"$gen" --shape tiny --type q8_0 --seed 3 --vocab tests/data/tokenizer/ggml-vocab-gpt-2.gguf \
  -o "$tmp/other-vocab.gguf" 2>/dev/null
m=(-m "$tmp/target.gguf" -t 1)
mf=(-m models/fixture-target.gguf -t 1) # the target the committed EAGLE-3 head was trained for
code='static int add(int a, int b) { return a + b; } static int sub(int a, int b) { return a - b; } static int'

# expect_exit CODE PATTERN ARGS...: exit status CODE, stderr one line matching PATTERN.
expect_exit() {
  local want=$1 pat=$2; shift 2
  local rc=0
  "$bin" generate "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  if [ "$rc" != "$want" ]; then fail "generate $* exited $rc, want $want: $(cat "$tmp/err")"; return; fi
  if [ "$(wc -l <"$tmp/err")" != 1 ]; then fail "generate $*: stderr is not one line: $(cat "$tmp/err")"; fi
  grep -q "^specdec: .*$pat" "$tmp/err" || fail "generate $*: stderr lacks '$pat': $(cat "$tmp/err")"
}

# --help
"$bin" generate --help >"$tmp/help" || fail "--help exited non-zero"
grep -q -- "--spec" "$tmp/help" && grep -q -- "--draft-max" "$tmp/help" || fail "--help lacks options"

# usage errors -> 2
expect_exit 2 "unknown option" "${m[@]}" -p hi --bogus
expect_exit 2 "--spec fast: not one of none | ngram" "${m[@]}" -p hi --spec fast
expect_exit 2 "top-p" "${m[@]}" -p hi --top-p 2
expect_exit 2 "-n lots: not an integer in \[-1, 16777216\]" "${m[@]}" -p hi -n lots
expect_exit 2 "needs a value" "${m[@]}" -p hi -n
expect_exit 2 "exactly one of -p" "${m[@]}"
expect_exit 2 "drop --draft-sample" "${m[@]}" -p hi --temp 0.7 --check-lossless --draft-sample
expect_exit 2 "ngram-min" "${m[@]}" -p hi --ngram-min 3 --ngram-max 2

# runtime errors -> 1
expect_exit 1 "nope.gguf" -m "$tmp/nope.gguf" -p hi
expect_exit 1 "vocabulary" "${m[@]}" -p hi -md "$tmp/other-vocab.gguf"
expect_exit 1 "context" "${m[@]}" -p "$code" -c 8
expect_exit 1 "prompt file" "${m[@]}" -f "$tmp/no-such-prompt.txt"
pushd "$tmp" >/dev/null
expect_exit 1 "models/fixture-target.gguf" -p hi -t 1
popd >/dev/null

# n-gram (default auto without a draft): text on stdout, one stats line, LOSSLESS.
"$bin" generate "${m[@]}" -p "$code" -n 40 >"$tmp/out" 2>"$tmp/err" || fail "ngram run failed: $(cat "$tmp/err")"
[ -s "$tmp/out" ] || fail "no text on stdout"
[ "$(wc -l <"$tmp/err")" = 1 ] || fail "stderr is not one stats line: $(cat "$tmp/err")"
for f in "prefill .* tok/s" "decode .* tok/s" "spec auto (ngram)" "rounds" "α" "accepted/round" \
  "tokens/forward" "greedy .* tok/s" "speedup" "LOSSLESS 40/40" "load [0-9.]* s" \
  "weights resident [0-9.]* MiB (repacked [0-9.]*, file pages [0-9.]*)" "peak RSS [0-9.]* MiB"; do
  grep -q "$f" "$tmp/err" || fail "stats line lacks '$f': $(cat "$tmp/err")"
done

# --no-check: no greedy rerun; --spec none: plain decoding, same text as the speculative run.
"$bin" generate "${m[@]}" -p "$code" -n 40 --no-check >"$tmp/out2" 2>"$tmp/err2"
grep -q LOSSLESS "$tmp/err2" && fail "--no-check still checked"
"$bin" generate "${m[@]}" -p "$code" -n 40 --spec none >"$tmp/out3" 2>"$tmp/err3"
cmp -s "$tmp/out" "$tmp/out3" || fail "spec and plain texts differ"
grep -q "spec none" "$tmp/err3" || fail "spec none not reported"

# Draft model, K past the context end (-c leaves 6 positions after the prompt).
for spec in draft auto; do
  "$bin" generate "${m[@]}" -md "$tmp/draft.gguf" --spec $spec -p "$code" -n 30 >/dev/null 2>"$tmp/err" ||
    fail "--spec $spec failed: $(cat "$tmp/err")"
  grep -q "LOSSLESS 30/30" "$tmp/err" || fail "--spec $spec not lossless: $(cat "$tmp/err")"
done
n_code=$("$bin" generate "${m[@]}" -p "$code" -n 1 --json --spec none 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["n_prompt"])')
"$bin" generate "${m[@]}" -md "$tmp/draft.gguf" -p "$code" -n 30 -c $((n_code + 6)) --draft-max 8 \
  >/dev/null 2>"$tmp/err" || fail "short context run failed: $(cat "$tmp/err")"
grep -q "LOSSLESS 7/7" "$tmp/err" || fail "short context: want 7 tokens, lossless: $(cat "$tmp/err")"

# -f FILE and --json with every field.
printf '%s' "$code" >"$tmp/prompt.txt"
"$bin" generate "${m[@]}" -f "$tmp/prompt.txt" -n 24 --json >"$tmp/json" 2>/dev/null || fail "--json run failed"
python3 - "$tmp/json" <<'PY' || fail "--json fields"
import json, sys
o = json.load(open(sys.argv[1]))
keys = ["text", "n_prompt", "n_gen", "prefill_tok_s", "decode_tok_s", "tokens", "spec", "rounds",
        "drafted", "accepted", "acceptance", "accepted_per_round", "tokens_per_forward",
        "target_forwards", "draft_forwards", "lossless", "greedy_tok_s", "speedup", "load_s",
        "weights_resident_bytes", "weights_packed_bytes", "weights_f32_bytes", "weights_file_resident_bytes",
        "peak_rss_bytes"]
missing = [k for k in keys if k not in o]
assert not missing, missing
assert o["n_gen"] == len(o["tokens"]) == 24, o
assert o["lossless"] is True and o["speedup"] > 0 and o["spec"].startswith("auto"), o
assert 0 <= o["accepted"] <= o["drafted"] and o["target_forwards"] >= o["rounds"], o
# the weights are part of what the process holds; the packed and f32 copies are in the total
assert o["load_s"] > 0 and o["peak_rss_bytes"] > o["weights_packed_bytes"] + o["weights_f32_bytes"] > 0, o
if o["weights_resident_bytes"] is not None:
    assert o["weights_resident_bytes"] == o["weights_packed_bytes"] + o["weights_f32_bytes"] + o["weights_file_resident_bytes"], o
PY

# Sampling: the seed fixes the output. Deterministic drafts (the default) give plain sampling's bytes:
# LOSSLESS n/n at temp > 0 too; a draft model sampling its proposals (--draft-sample) is checked only
# in law (tests/decode/test_spec_sampling.c), so no LOSSLESS claim there.
a=$("$bin" generate "${m[@]}" -p "$code" -n 16 --temp 0.9 --top-k 40 --top-p 0.95 --min-p 0.01 --seed 7 2>"$tmp/err")
b=$("$bin" generate "${m[@]}" -p "$code" -n 16 --temp 0.9 --top-k 40 --top-p 0.95 --min-p 0.01 --seed 7 2>/dev/null)
[ "$a" = "$b" ] || fail "same seed, different samples"
grep -q "LOSSLESS 16/16" "$tmp/err" || fail "sampling with deterministic drafts: $(cat "$tmp/err")"
c=$("$bin" generate "${mf[@]}" -p "$code" -n 16 --temp 0.9 --seed 7 --spec none 2>/dev/null)
d=$("$bin" generate "${mf[@]}" -p "$code" -n 16 --temp 0.9 --seed 7 --spec eagle3 -md models/fixture-eagle3.gguf 2>"$tmp/err")
[ "$c" = "$d" ] && grep -q "LOSSLESS 16/16" "$tmp/err" || fail "eagle3 at temp 0.9: not plain sampling's bytes"
"$bin" generate "${m[@]}" -p "$code" -n 16 --temp 0.9 --seed 7 --draft-sample -md models/fixture-draft.gguf \
  >/dev/null 2>"$tmp/err" || fail "--draft-sample: $(cat "$tmp/err")"
grep -q LOSSLESS "$tmp/err" && fail "sampled drafts claim LOSSLESS"

# EAGLE-3 head: greedy lossless; the roles of -md files are checked.
"$bin" generate "${mf[@]}" -p "$code" -n 24 --spec eagle3 -md models/fixture-eagle3.gguf >/dev/null 2>"$tmp/err" ||
  fail "eagle3: $(cat "$tmp/err")"
grep -q "spec eagle3 .*LOSSLESS 24/24" "$tmp/err" || fail "eagle3: $(cat "$tmp/err")"
"$bin" generate "${mf[@]}" -p "$code" -n 24 -md models/fixture-eagle3.gguf >/dev/null 2>"$tmp/err"
grep -q "spec auto (ngram + eagle3) .*LOSSLESS 24/24" "$tmp/err" || fail "auto + eagle3: $(cat "$tmp/err")"
expect_exit 1 "not an EAGLE-3 head" "${mf[@]}" -p hi --spec eagle3 -md models/fixture-draft.gguf
expect_exit 1 "use --spec eagle3" "${mf[@]}" -p hi --spec draft -md models/fixture-eagle3.gguf
expect_exit 1 "target_hidden_size 256, the target's n_embd is 96" -m models/fixture-draft.gguf -p hi --spec eagle3 \
  -md models/fixture-eagle3.gguf

# --chat: the ChatML markers are parsed as single special tokens.
chat=$("$bin" generate "${m[@]}" --chat -p hi -n 1 --json --spec none 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["n_prompt"])')
literal=$("$bin" generate "${m[@]}" -p $'<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n' -n 1 \
  --json --spec none 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["n_prompt"])')
[ "$chat" -lt "$literal" ] && [ "$chat" -ge 7 ] || fail "--chat: $chat tokens vs literal $literal"

# stdout and stderr into one file: the stats line starts a line of its own (the text
# gets a newline when it lacks one); stdout alone holds exactly the generated bytes.
"$bin" generate "${m[@]}" -p "$code" -n 12 --spec none --no-check >"$tmp/both" 2>&1 || fail "generate >file 2>&1 failed"
tail -n 1 "$tmp/both" | grep -q '^prefill ' || fail "the stats line does not start a line: $(tail -c 300 "$tmp/both")"
"$bin" generate "${m[@]}" -p "$code" -n 12 --spec none --no-check >"$tmp/alone" 2>/dev/null
cmp -s -n "$(stat -c %s "$tmp/alone")" "$tmp/alone" "$tmp/both" || fail "the text in the shared file differs from stdout alone"

finish
