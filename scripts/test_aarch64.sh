#!/usr/bin/env bash
# Cross-builds specdec for aarch64 (cmake/aarch64-linux-gnu.cmake, Debian's
# gcc-aarch64-linux-gnu and the arm64 dev packages of scripts/deps.sh --test)
# into build-aarch64/ and runs a selection of the tests under qemu-aarch64:
# each on the NEON kernels (the default there) and with SPECDEC_ISA=scalar,
# and the kernel tests once more on a CPU without the dot-product
# instructions (QEMU_CPU=cortex-a72: the plain NEON integer dots).
#   scripts/test_aarch64.sh            build + run the kernel tests (CI)
#   scripts/test_aarch64.sh --full     also the model and lossless tests (slow)
#   scripts/test_aarch64.sh --list     print the selection
set -euo pipefail
cd "$(dirname "$0")/.."
# The selection, sized for emulation (each test runs 2-3 times): the kernels'
# scalar-vs-SIMD and batch-invariance comparisons (matmul of every weight
# type, row ops, GDN, quantizers, f16), about a minute a pass under qemu.
tests=(test_matmul test_ops test_gdn test_quant test_quant_k test_fp16)
# ISA golden hash (tests/numerics/test_isa_golden.c, the same logits hash on
# every ISA): add test_isa_golden here once it is in the tree.
# --full: forwards of every weight type S=1 vs batched (batch invariance), the
# qwen35 hybrid, and speculative == greedy on the fixtures (lossless); each
# takes many minutes under emulation.
if [ "${1:-}" = "--full" ]; then tests+=(test_batch_invariance test_qwen35 test_spec_models); fi
nodot=(test_matmul)
if [ "${1:-}" = "--list" ]; then echo "${tests[*]}"; exit 0; fi
for tool in aarch64-linux-gnu-gcc qemu-aarch64; do
  command -v "$tool" >/dev/null || { echo "test_aarch64: $tool not found (scripts/deps.sh --test)" >&2; exit 1; }
done
dir=build-aarch64
cmake -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$dir" -j "$(nproc)" --target "${tests[@]}" >"$dir/build.log" ||
  { tail -40 "$dir/build.log"; exit 1; }
# One OpenMP thread: under qemu-user (Debian 12's 7.2) a parallel region of two
# threads never returns, even in a ten-line program. Results do not depend on
# the thread count (DESIGN.md §5; the native suite checks 1-3 threads), and the
# tests' num_threads(3) becomes 1 thread here. Passive waits: the tests
# re-exec themselves to set it, which qemu-user cannot do for a guest binary.
export OMP_THREAD_LIMIT=1 OMP_WAIT_POLICY=passive
regex="^($(IFS='|'; echo "${tests[*]}"))\$"
run() { # label, env..., then the ctest regex
  local label=$1 re=$2; shift 2
  local t0=$SECONDS
  (cd "$dir" && env "$@" ctest --output-on-failure -R "$re" -j "$(nproc)" >"ctest-$label.log" 2>&1) ||
    { cat "$dir/ctest-$label.log"; echo "test_aarch64: $label failed" >&2; exit 1; }
  grep -E "tests passed|Total Test time" "$dir/ctest-$label.log" | sed "s/^/[$label] /"
  echo "[$label] $((SECONDS - t0)) s"
}
run neon "$regex" SPECDEC_ISA=neon
run scalar "$regex" SPECDEC_ISA=scalar
run neon-nodotprod "^($(IFS='|'; echo "${nodot[*]}"))\$" SPECDEC_ISA=neon QEMU_CPU=cortex-a72
