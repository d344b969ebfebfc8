#!/usr/bin/env bash
# Builds specdec and runs the whole test suite with ctest.
#   scripts/test.sh            normal build in build/
#   scripts/test.sh --asan     AddressSanitizer + UBSan build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build; opts=(-DCMAKE_BUILD_TYPE=Release)
if [ "${1:-}" = "--asan" ]; then
  dir=build-asan; opts=(-DCMAKE_BUILD_TYPE=Debug -DSD_SANITIZE=ON)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export SD_ASAN=1
fi
cmake -S . -B "$dir" "${opts[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)"
cd "$dir" && ctest --output-on-failure -j "$(nproc)"
