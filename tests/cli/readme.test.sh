#!/usr/bin/env bash
# README.md is for a newcomer: no sentence dates a figure by the hour or says where
# or in which session it was measured (figures are dated by version and point to
# bench/RESULTS.md), and the quick-start commands are the ones this tree supports.
set -u
cd "${SD_SOURCE_DIR:-$(dirname "$0")/../..}"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for pat in 'UTC' 'this session' 'on this VM' 'measured here' 'trained here' '[0-9][0-9]:[0-9][0-9] section' \
           'design brief'; do
  hits=$(grep -n -i -- "$pat" README.md)
  [ -z "$hits" ] || fail "README.md says '$pat': $hits"
done
grep -q -- 'cmake --build build --target specdec' README.md || fail "the quick start does not build only specdec"
grep -q -- 'scripts/deps.sh --test && bash scripts/test.sh' README.md || fail "the test command lacks deps.sh --test"
grep -q -- '--test' scripts/deps.sh || fail "scripts/deps.sh has no --test"
grep -q '^## Performance' README.md && grep -q 'bench/RESULTS.md' README.md || fail "no Performance section linking bench/RESULTS.md"
[ "$fails" = 0 ] && echo "readme.test.sh: all checks passed"
exit "$fails"
