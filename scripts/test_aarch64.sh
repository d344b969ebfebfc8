#!/usr/bin/env bash
# Cross-builds specdec for aarch64 (cmake/aarch64-linux-gnu.cmake, Debian's
# gcc-aarch64-linux-gnu and the arm64 dev packages of scripts/deps.sh --test)
# into build-aarch64/ and runs a selection of the tests under qemu-aarch64:
# each on the NEON kernels (the default there) and with SPECDEC_ISA=scalar,
# and the kernel tests once more on a CPU without the dot-product
# instructions (QEMU_CPU=cortex-a72: the plain NEON integer dots).
#   scripts/test_aarch64.sh            build + run
#   scripts/test_aarch64.sh --list     print the selection
set -euo pipefail
cd "$(dirname "$0")/.."
# The selection, sized for emulation (each test runs 2-3 times):
#   kernels: matmul / ops / quant / GDN scalar-vs-SIMD comparisons;
#   model: batch invariance of the forwards;
#   lossless: speculative output == greedy output on the fixture models.
tests=(test_matmul test_ops test_gdn test_quant test_quant_k test_fp16
       test_batch_invariance test_qwen35 test_spec_models)
# ISA golden hash (tests/numerics/test_isa_golden.c, same logits hash on every
# ISA): add test_isa_golden here once it is in the tree.
nodot=(test_matmul)
if [ "${1:-}" = "--list" ]; then echo "${tests[*]}"; exit 0; fi
for tool in aarch64-linux-gnu-gcc qemu-aarch64; do
  command -v "$tool" >/dev/null || { echo "test_aarch64: $tool not found (scripts/deps.sh --test)" >&2; exit 1; }
done
dir=build-aarch64
cmake -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$dir" -j "$(nproc)" --target "${tests[@]}" specdec
export OMP_WAIT_POLICY=passive # the tests re-exec themselves to set it; qemu-user cannot exec a guest binary
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
