#!/usr/bin/env bash
# Builds specdec and runs the test suite with ctest (all cores).
#   scripts/test.sh            normal build in build/, every test but the long ones
#   scripts/test.sh --asan     AddressSanitizer + UBSan build in build-asan/, the same tests
#   scripts/test.sh --long     normal build, only the tests labelled long: the
#                              property sweeps that run in rotation by default, in full
# Extra arguments go to ctest (e.g. -R server). At the end it lists the skipped
# tests with their reasons (scripts/skips.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build; opts=(-DCMAKE_BUILD_TYPE=Release); select=(-LE long)
case "${1:-}" in
  --asan)
    shift
    dir=build-asan; opts=(-DCMAKE_BUILD_TYPE=Debug -DSD_SANITIZE=ON)
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    export SD_ASAN=1 ;;
  --long) shift; select=(-L long) ;;
esac
cmake -S . -B "$dir" -DSD_TESTS=ON "${opts[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)"
# ctest's summary goes to $dir/ctest.out too: scripts/skips.sh lists the
# skipped tests from it with their reasons.
rc=0
(cd "$dir" && ctest --output-on-failure --no-tests=error -j "$(nproc)" "${select[@]}" "$@") | tee "$dir/ctest.out" || rc=$?
bash scripts/skips.sh "$dir" || true
exit "$rc"
