#!/usr/bin/env bash
# Cross-builds specdec for aarch64 (cmake/aarch64-linux-gnu.cmake, Debian's
# gcc-aarch64-linux-gnu and the arm64 dev packages of scripts/deps.sh --test)
# into build-aarch64/ and runs a selection of the tests under qemu-aarch64:
# each on the NEON kernels (the default there) and with SPECDEC_ISA=scalar,
# and the kernels once more on a CPU without the dot-product instructions
# (QEMU_CPU=cortex-a72: the plain NEON integer dots).
#   scripts/test_aarch64.sh            build + run the selection below (CI)
#   scripts/test_aarch64.sh --full     the model tests with their full sweeps, and
#                                      test_lossless_classes (slow: many minutes each)
#   scripts/test_aarch64.sh --list     print the selection
set -euo pipefail
cd "$(dirname "$0")/.."
# The selection, sized for emulation (qemu-user runs these ~50x slower than
# native). Kernels, on NEON and scalar: the scalar-vs-SIMD and batch-
# invariance comparisons (every kernel-table row this CPU runs, matmul of
# every weight type, row ops, GDN, quantizers, f16), about a minute a pass.
tests=(test_kernels test_matmul test_ops test_gdn test_quant test_quant_k test_fp16 test_iq_types)
# Models, with SD_TEST_EMULATED=1 (each test's emulation subset, see its head
# comment): test_isa_golden (the logits hash of a fixed forward equals the
# x86 golden, tests/data/isa_golden.txt, on every path this CPU runs: NEON
# and scalar in one process), batch invariance (S=1 vs batched, splits,
# rollback, on tiny models and the dense and qwen35 fixtures), quantized KV
# caches (test_kv_types: q8_0 and q4_0 on the four fixtures, invariance and the
# x86 golden hashes of tests/data/kv_golden.txt) and LOSSLESS
# (speculative == greedy with n-gram, draft and auto: tiny models of each
# dense architecture and the dense fixture). On NEON only: the scalar path is
# checked against the same golden hashes, and runs these natively on x86.
# qemu CPU seconds (bench/RESULTS.md, 2026-12-02): isa_golden 70, again
# without SDOT 69, batch invariance 25, spec_models 70.
models=(test_isa_golden test_batch_invariance test_spec_models test_kv_types)
# --full adds LOSSLESS on both fixtures with every drafter and both samplers
# (test_lossless_classes: over 9 min of qemu CPU even for its subset).
[ "${1:-}" = "--full" ] && models+=(test_lossless_classes)
# Without SDOT: the plain NEON dots.
nodot=(test_kernels test_matmul test_isa_golden test_iq_types)
full=0
[ "${1:-}" = "--full" ] && full=1
if [ "${1:-}" = "--list" ]; then echo "${tests[*]} ${models[*]}"; exit 0; fi
for tool in aarch64-linux-gnu-gcc qemu-aarch64; do
  command -v "$tool" >/dev/null || { echo "test_aarch64: $tool not found (scripts/deps.sh --test)" >&2; exit 1; }
done
dir=build-aarch64
cmake -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$dir" -j "$(nproc)" --target "${tests[@]}" "${models[@]}" >"$dir/build.log" ||
  { tail -40 "$dir/build.log"; exit 1; }
# One OpenMP thread: under qemu-user (Debian 12's 7.2) a parallel region of two
# threads never returns, even in a ten-line program. Results do not depend on
# the thread count (ARCHITECTURE.md §5; the native suite checks 1-3 threads), and the
# tests' num_threads(3) becomes 1 thread here. Passive waits: the tests
# re-exec themselves to set it, which qemu-user cannot do for a guest binary.
export OMP_THREAD_LIMIT=1 OMP_WAIT_POLICY=passive
# The model tests' emulation subsets (unless --full).
[ $full = 1 ] || export SD_TEST_EMULATED=1
re() { echo "^($(IFS='|'; echo "$*"))\$"; }
run() { # label, env..., then the ctest regex
  local label=$1 re=$2; shift 2
  local t0=$SECONDS
  (cd "$dir" && env "$@" ctest --output-on-failure -R "$re" -j "$(nproc)" >"ctest-$label.log" 2>&1) ||
    { cat "$dir/ctest-$label.log"; echo "test_aarch64: $label failed" >&2; exit 1; }
  grep -E "tests passed|Total Test time" "$dir/ctest-$label.log" | sed "s/^/[$label] /"
  echo "[$label] $((SECONDS - t0)) s"
}
run neon "$(re "${tests[@]}" "${models[@]}")" SPECDEC_ISA=neon
run scalar "$(re "${tests[@]}")" SPECDEC_ISA=scalar
run neon-nodotprod "$(re "${nodot[@]}")" SPECDEC_ISA=neon QEMU_CPU=cortex-a72
