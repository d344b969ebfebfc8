#!/usr/bin/env bash
# Model defaults shared by the subcommands (src/cli/model_args.c): tokenize
# and bench, like generate, run the bundled fixture pair when -m / -md are not
# given; --help says so; outside the repository root the missing default is
# one error line. And -c beyond {arch}.context_length: allowed, with one
# warning line (llama.cpp's behaviour).
set -euo pipefail
bin=$(realpath "${SD_SPECDEC_BIN:?}")
. "${SD_SOURCE_DIR:?}/tests/support/checks.sh"
T=models/fixture-target.gguf
text='int main(void) { return 0; }'

# tokenize: no -m = the fixture target.
[ "$("$bin" tokenize -p "$text")" = "$("$bin" tokenize -m "$T" -p "$text")" ] || fail "tokenize default model"

# bench: no -m = target and draft fixtures. The draft drafter runs only with
# a draft model: with the default pair, not with -m alone.
mkdir "$tmp/prompts"
printf 'class: code\n%s' "$text" >"$tmp/prompts/a.txt"
quick=(--prompts "$tmp/prompts" --tables classes --drafters draft -n 4 --reps 1 -t 1)
draft_runs() { # JSON file -> "yes" if the class table has a lossless draft run
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["classes"][0]["drafters"].get("draft")
print("yes" if d and d["lossless_ok"] == 1 else "no")' "$1"
}
"$bin" bench "${quick[@]}" --json "$tmp/b.json" >/dev/null 2>"$tmp/err" || fail "bench without -m: $(cat "$tmp/err")"
grep -q "^specdec: using models/fixture-draft.gguf as the draft model" "$tmp/err" || fail "bench: no draft note"
[ "$(draft_runs "$tmp/b.json")" = yes ] || fail "bench default pair: no lossless draft run"
"$bin" bench -m "$T" "${quick[@]}" --json "$tmp/c.json" >/dev/null 2>"$tmp/err" || fail "bench -m: $(cat "$tmp/err")"
[ "$(draft_runs "$tmp/c.json")" = no ] || fail "bench -m alone ran the draft drafter"
grep -q "using models/fixture-draft" "$tmp/err" && fail "bench -m: the default draft was paired with a given target"
a=$("$bin" bench --greedy-ids "$text" -n 3 -t 1 2>/dev/null)
b=$("$bin" bench -m "$T" --greedy-ids "$text" -n 3 -t 1 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "bench --greedy-ids default model: '$a' vs '$b'"

# --help documents the defaults.
# (The help goes to a file first: grep -q quits at the first match, and a
# longer help written after that would fail on the closed pipe.)
for c in tokenize bench generate; do
  "$bin" $c --help >"$tmp/help" && grep -q "default $T" "$tmp/help" || fail "$c --help does not name the default model"
done
"$bin" bench --help | grep "default models/fixture-draft.gguf" >/dev/null || fail "bench --help does not name the default draft"
# -md in the shared option table (generate, serve, chat): one line per kind
# of drafter file naming its --spec mode, the default on a line of its own,
# no line past 100 columns.
for c in generate serve chat; do
  "$bin" $c --help >"$tmp/help" 2>&1 || true
  sed -n '/^  -md, --model-draft/,/^  -n, --n-predict/p' "$tmp/help" | sed '$d' >"$tmp/md"
  for mode in draft eagle3 dflash mtp; do
    [ "$(grep -c -- "(--spec $mode)\$" "$tmp/md")" = 1 ] || fail "$c --help: -md has no line of its own for --spec $mode"
  done
  grep -q -x ' *default none' "$tmp/md" || fail "$c --help: -md's default is not on a line of its own"
  grep -q 'Without -m, auto and draft pair the fixture draft' "$tmp/md" || fail "$c --help: -md does not say when the fixture draft is paired"
  awk 'length > 100 { exit 1 }' "$tmp/md" || fail "$c --help: an -md line is longer than 100 columns"
done

# Outside the repository root: exit 1, one line naming the default path.
for cmd in "tokenize -p hi" "bench -n 2 --reps 1"; do
  rc=0
  (cd "$tmp" && "$bin" $cmd) >/dev/null 2>"$tmp/err" || rc=$?
  [ "$rc" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "^specdec: .*$T" "$tmp/err" ||
    fail "$cmd outside the repo: rc $rc, $(cat "$tmp/err")"
done

# -c beyond the trained context: a warning, then the run as usual.
n_train=$("$bin" inspect --json "$T" | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(next(m["value"] for m in j["metadata"] if m["key"] == j["architecture"] + ".context_length"))')
big=$((n_train * 4))
"$bin" generate -p hi -n 2 -t 1 --spec none -c "$big" >/dev/null 2>"$tmp/err" || fail "-c $big failed: $(cat "$tmp/err")"
[ "$(head -n 1 "$tmp/err")" = "specdec: warning: -c $big exceeds the model's trained context $n_train" ] ||
  fail "-c $big: $(cat "$tmp/err")"
[ "$(grep -c warning "$tmp/err")" = 1 ] || fail "-c $big: not exactly one warning"
for c in "-c $n_train" ""; do
  "$bin" generate -p hi -n 2 -t 1 --spec none $c >/dev/null 2>"$tmp/err" || fail "'$c' failed"
  grep -q warning "$tmp/err" && fail "'$c' warned: $(cat "$tmp/err")"
done
"$bin" generate --help >"$tmp/help" && grep -q "trained context" "$tmp/help" || fail "generate --help does not say what -c beyond training does"

finish
