#!/usr/bin/env bash
# README.md is a front door and docs/ the reference, both for a reader of the
# code as it is now: no words about how the project was made (the hours or
# dates sections were written, "session", "UTC", the brief it was built from,
# "this machine"); figures are dated by version and point to
# docs/PERFORMANCE.md and bench/RESULTS.md (a measurement log, not checked
# here). README stays short: at most 150 lines, an opening of at most 60 words,
# the two commands of its quick start each on one line. Links resolve, and
# every "ARCHITECTURE.md §N" in the tree names a section that exists.
set -u
cd "${SD_SOURCE_DIR:-$(dirname "$0")/../..}"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
docs=(README.md docs/*.md models/README.md bench/README.md python/README.md)

# Words about the making of the project (case-insensitive extended regexes).
for pat in '\bUTC\b' '\bsessions?\b' 'this machine' 'this VM' 'measured here' 'trained here' 'source work' \
           'design brief' '\bthe brief\b' 'ours must' '\b[0-9]{1,2}:[0-9]{2} (section|run)\b' \
           '^#+ .*\b20[0-9]{2}-[0-9]{2}-[0-9]{2}\b' '\bnot (implemented|committed) yet\b'; do
  # "session id" (a web session, docs/SCALE_OUT.md) is no such word
  hits=$(grep -n -i -E -- "$pat" "${docs[@]}" | grep -v -i -E 'session id')
  [ -z "$hits" ] || fail "the docs say '$pat': $hits"
done

# README: short, with a short opening paragraph (the lines after the title, up to the first blank line).
lines=$(wc -l <README.md)
[ "$lines" -le 150 ] || fail "README.md has $lines lines (at most 150)"
words=$(awk 'NR > 1 && /^$/ && seen { exit } NR > 1 && !/^$/ { seen = 1; print }' README.md | wc -w)
[ "$words" -gt 0 ] && [ "$words" -le 60 ] || fail "README.md's opening has $words words (at most 60)"

# The two commands, each on one line: build + generate with speculation, and the tests.
grep -q -x -- 'sudo bash scripts/deps.sh && cmake -S . -B build && cmake --build build --target specdec -j"$(nproc)" && build/specdec generate .*' README.md ||
  fail "README's quick start is not the one-line deps + build + generate command"
grep -q -x -- 'sudo bash scripts/deps.sh --test && bash scripts/test.sh' README.md || fail "README's test command is missing"
grep -q -- '--test' scripts/deps.sh || fail "scripts/deps.sh has no --test"
grep -q '^## Performance' README.md && grep -q 'docs/PERFORMANCE.md' README.md && grep -q 'bench/RESULTS.md' README.md ||
  fail "no Performance section linking docs/PERFORMANCE.md and bench/RESULTS.md"
grep -q 'docs/DEPENDENCIES.md' README.md || fail "README does not point to docs/DEPENDENCIES.md"

# Relative links of the docs resolve. Pages another branch adds are listed in
# `pending` until they are in the tree.
pending=" "
for f in "${docs[@]}"; do
  dir=$(dirname "$f")
  for link in $(grep -o -E '\]\([^)#]+' "$f" | sed 's/^](//' | grep -v -E '^[a-z]+:'); do
    target=$(realpath -m --relative-to=. "$dir/$link")
    [ -e "$target" ] && continue
    case "$pending" in *" $target "*) echo "pending: $f links $target (added by another branch)"; continue ;; esac
    fail "$f links $link, which does not exist"
  done
done

# Every "ARCHITECTURE.md §N" cited in the tree is a numbered section of docs/ARCHITECTURE.md.
for n in $(grep -r -h -o -E 'ARCHITECTURE\.md §[0-9]+' --include='*.[ch]' --include='*.md' --include='*.py' \
             --include='*.sh' --include='*.mjs' src include tests tools bench docs models scripts python 2>/dev/null |
           sed 's/.*§//' | sort -u); do
  grep -q -E "^## $n\. " docs/ARCHITECTURE.md || fail "ARCHITECTURE.md §$n is cited but has no section '## $n.'"
done
[ -e docs/DESIGN.md ] && fail "docs/DESIGN.md is back: docs/ARCHITECTURE.md replaced it"
grep -r -l 'DESIGN\.md' --include='*.[ch]' --include='*.md' --include='*.py' --include='*.sh' src include tests \
  tools bench docs models scripts python README.md CMakeLists.txt 2>/dev/null | grep -v 'readme.test.sh' |
  while read -r f; do echo "FAIL: $f still cites DESIGN.md"; done | grep . && fails=$((fails + 1))

[ "$fails" = 0 ] && echo "readme.test.sh: all checks passed"
exit "$fails"
