#!/usr/bin/env bash
# `specdec generate --grammar-file / --json-schema` on the fixture pair: the
# output is a sentence of the grammar, speculation (auto, which also drafts
# the grammar's forced text, and the grammar-forced drafter alone) is LOSSLESS
# against constrained plain decoding; bad grammars, schemas and flag
# combinations fail with one line naming the problem.
set -u
bin=${SD_SPECDEC_BIN:?}
src=${SD_SOURCE_DIR:?}
cd "$src"
. tests/support/checks.sh
M="-m models/fixture-target.gguf -md models/fixture-draft.gguf -t 1"

printf 'root ::= "{\\"answer\\": " ("\\"yes\\"" | "\\"no\\"" | [0-9]{1,3}) "}"\n' > "$tmp/answer.gbnf"
for spec in auto grammar ngram; do
  out=$("$bin" generate $M -p "int main(void) {" -n 24 --spec "$spec" --grammar-file "$tmp/answer.gbnf" 2>"$tmp/err")
  rc=$?
  [ "$rc" = 0 ] || fail "--spec $spec --grammar-file: exit $rc: $(cat "$tmp/err")"
  echo "$out" | grep -Eq '^\{"answer": ("yes"|"no"|[0-9]{1,3})\}$' || fail "--spec $spec: output '$out' is not a sentence"
  grep -q "LOSSLESS [0-9]*/[0-9]*" "$tmp/err" || fail "--spec $spec: no LOSSLESS in: $(tail -1 "$tmp/err")"
done

echo '{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":99}},"required":["n"],"additionalProperties":false}' > "$tmp/s.json"
out=$("$bin" generate $M -p "x = " -n 32 --spec auto --json-schema "$tmp/s.json" 2>"$tmp/err") || fail "--json-schema: $(cat "$tmp/err")"
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert list(d)==["n"] and 0<=d["n"]<=99' "$out" 2>/dev/null ||
  grep -q "LOSSLESS 32/32" "$tmp/err" || fail "--json-schema: '$out' neither parses and fits nor ran to -n"

# The cost counters (--json): constrained runs spent time constraining, the
# verify rounds' share is part of it; unconstrained runs report none.
"$bin" generate $M -p "x = " -n 24 --spec auto --json --json-schema "$tmp/s.json" >"$tmp/on.json" 2>/dev/null ||
  fail "--json --json-schema failed"
"$bin" generate $M -p "x = " -n 24 --spec auto --json >"$tmp/off.json" 2>/dev/null || fail "--json failed"
python3 - "$tmp/on.json" "$tmp/off.json" <<'PY' || fail "grammar counters wrong: $(cat "$tmp/on.json" "$tmp/off.json")"
import json, sys
on, off = (json.load(open(p)) for p in sys.argv[1:3])
assert on["grammar_ms"] > 0 and 0 <= on["grammar_rounds_ms"] <= on["grammar_ms"] and on["grammar_masks"] >= 0, on
assert on["rounds"] == 0 or on["grammar_rounds_ms"] > 0, on
assert off["grammar_ms"] == 0 and off["grammar_rounds_ms"] == 0 and off["grammar_masks"] == 0, off
PY

expect_error() { # rc, needle, args...
  local want=$1 needle=$2; shift 2
  "$bin" generate "$@" >/dev/null 2>"$tmp/err"
  local rc=$?
  [ "$rc" = "$want" ] || fail "$*: exit $rc, not $want"
  [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q -- "$needle" "$tmp/err" || fail "$*: stderr lacks '$needle': $(cat "$tmp/err")"
}
printf 'root ::= "a" (\n' > "$tmp/bad.gbnf"
expect_error 1 "bad.gbnf: grammar 1:14: unclosed '('" $M -p x --grammar-file "$tmp/bad.gbnf"
printf 'root ::= a\na ::= a "x" | "y"\n' > "$tmp/left.gbnf"
expect_error 1 "rule 'a' is left-recursive" $M -p x --grammar-file "$tmp/left.gbnf"
echo '{"type":"strng"}' > "$tmp/bad.json"
expect_error 1 "bad.json: json schema" $M -p x --json-schema "$tmp/bad.json"
expect_error 1 "cannot open the grammar file" $M -p x --grammar-file "$tmp/none.gbnf"
expect_error 2 "at most one of --grammar-file and --json-schema" $M -p x --grammar-file "$tmp/answer.gbnf" --json-schema "$tmp/s.json"
expect_error 2 "--spec grammar needs --grammar-file or --json-schema" $M -p x --spec grammar
finish
