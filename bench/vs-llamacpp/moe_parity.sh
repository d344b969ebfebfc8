#!/usr/bin/env bash
# Next-token distributions of specdec (sd-probs) and llama.cpp (node-llama-cpp,
# probs_chain.mjs) along one token chain on the same GGUF, e.g. a random-weight
# MoE file from `sd-genmodel --shape qwen3moe-tiny --type f32`. Prints, per
# position, both argmaxes, the largest |p_specdec - p_llama.cpp| and the largest
# log-probability (= logit, up to a constant) difference over the vocabulary. Random weights have near-ties,
# so compare distributions, not greedy ids (ARCHITECTURE.md §10).
#   bench/vs-llamacpp/moe_parity.sh MODEL.gguf [IDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
model=${1:?usage: moe_parity.sh MODEL.gguf [ID,ID,...]}; ids=${2:-9707,11,1879,374,264,1273,315,279,11514,13,576,1879}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"${SD_BUILD_DIR:-$root/build}/sd-probs" "$model" "$ids" > "$tmp/ours"
node "$here/probs_chain.mjs" "$model" "$ids" > "$tmp/theirs"
/usr/bin/python3 - "$tmp/ours" "$tmp/theirs" <<'PY'
import math, sys
a = [list(map(float, l.split())) for l in open(sys.argv[1])]
b = [list(map(float, l.split())) for l in open(sys.argv[2])]
worst_p = worst_l = 0.0
same = 0
for i, (x, y) in enumerate(zip(a, b)):
    dp = max(abs(p - q) for p, q in zip(x, y))
    # log-probabilities are the logits up to a per-row constant: their difference is the logit error
    dl = max(abs(math.log(max(p, 1e-30)) - math.log(max(q, 1e-30))) for p, q in zip(x, y))
    lx = [math.log(max(p, 1e-30)) for p in x]
    spread = max(lx) - min(lx)
    worst_p, worst_l = max(worst_p, dp), max(worst_l, dl)
    ax, ay = max(range(len(x)), key=x.__getitem__), max(range(len(y)), key=y.__getitem__)
    same += ax == ay
    print(f"pos {i}: argmax specdec {ax}, llama.cpp {ay}; max |dp| {dp:.3g}, max |d log p| {dl:.3g} (log p spread {spread:.3g})")
print(f"{len(a)} positions x {len(a[0])} tokens: argmax equal {same}/{len(a)}, max |dp| {worst_p:.3g}, "
      f"max |d log p| (= logit difference) {worst_l:.3g}")
PY
