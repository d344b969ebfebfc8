#!/usr/bin/env bash
# The tests ctest skipped in its last run in BUILD_DIR (scripts/test.sh keeps
# ctest's summary in BUILD_DIR/ctest.out), one line each with the reason the
# test printed ("SKIPPED: ..." in its output, Testing/Temporary/LastTest.log).
#   scripts/skips.sh BUILD_DIR         list them
#   scripts/skips.sh BUILD_DIR --ci    also exit 1 when a skip's reason does not
#                                      hold on CI: a missing package (CI installs
#                                      every one, scripts/deps.sh --test), or no
#                                      reason at all. A CPU feature the machine
#                                      lacks (AVX-512, ...) is a reason that holds.
set -euo pipefail
dir=${1:?usage: scripts/skips.sh BUILD_DIR [--ci]}
ci=false; [ "${2:-}" = --ci ] && ci=true
summary=$dir/ctest.out log=$dir/Testing/Temporary/LastTest.log
[ -f "$summary" ] && [ -f "$log" ] || { echo "skips: no ctest run in $dir (run scripts/test.sh)" >&2; exit 2; }
mapfile -t names < <(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$summary")
echo "skipped tests: ${#names[@]}"
bad=0
for name in "${names[@]}"; do
  # the SKIPPED lines of this test's block of the log
  reasons=$(awk -v t="$name" '$0 ~ /^[0-9]+\/[0-9]+ Test: / { on = ($3 == t) } on && /^SKIPPED/' "$log" |
            sed 's/^SKIPPED:* *//' | sort -u | paste -sd ';' | sed 's/;/; /g')
  verdict=""
  if [ -z "$reasons" ]; then
    reasons="(no reason printed)"; verdict="  <- not allowed on CI"
  elif grep -q 'missing package' <<<"$reasons"; then
    verdict="  <- not allowed on CI: scripts/deps.sh --test installs it"
  fi
  $ci && [ -n "$verdict" ] && bad=1
  echo "  $name: $reasons$($ci && echo "$verdict")"
done
$ci && [ "$bad" = 1 ] && { echo "skips: a skip above does not hold on CI" >&2; exit 1; }
exit 0
