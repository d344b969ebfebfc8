#!/usr/bin/env bash
# The quantizer table of bench/RESULTS.md: for each of llama.cpp's
# importance-matrix file types, specdec quantize and llama-quantize from the
# same f32 source with the same imatrix, compared per tensor by
# sd-quant_compare (identical / differing blocks where both chose the same
# type, imatrix-weighted squared error against the f32 source).
#   LLAMA_BIN=DIR bench/quant/compare.sh [OUT.md]     (from the repository root)
# DIR holds llama.cpp's llama-quantize and llama-imatrix. The f32 sources are
# the Q8_0 fixtures widened by `specdec quantize ... f32`, so both quantizers
# start from the same floats. Dense: models/fixture-target.gguf with
# tests/data/iq/imatrix.gguf; MoE (MXFP4_MOE and the override mix):
# models/fixture-moe-target.gguf with an imatrix llama-imatrix makes here.
# mix-kquants puts every k-quant and legacy type the weighted search writes
# (Q2_K..Q6_K, Q4_0, Q4_1, Q5_0, Q5_1) on the dense fixture's matrices.
set -euo pipefail
: "${LLAMA_BIN:?LLAMA_BIN=DIR with llama-quantize and llama-imatrix}"
out=${1:-bench/quant/tables.md}
bin=${SPECDEC_BIN:-build/specdec}
cmp=${QUANT_COMPARE:-build/sd-quant_compare}
tmp=${TMPDIR:-/tmp}/sd-quant-compare
mkdir -p "$tmp"
threads=${THREADS:-2}

"$bin" quantize models/fixture-target.gguf "$tmp/dense-f32.gguf" f32 >/dev/null
"$bin" quantize models/fixture-moe-target.gguf "$tmp/moe-f32.gguf" f32 >/dev/null
im=tests/data/iq/imatrix.gguf
[ -f "$tmp/moe-imatrix.gguf" ] || "$LLAMA_BIN/llama-imatrix" -m models/fixture-moe-target.gguf \
  -f tests/data/iq/calib.txt -o "$tmp/moe-imatrix.gguf" -c 256 -t "$threads" --chunks 8 >/dev/null 2>&1

summary="$tmp/summary.md"
{
  echo "| file type | source | blocks | identical | differing | E ours | E llama-quantize | ours/theirs | ours s | theirs s |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$summary"
: >"$out.tmp"

# run LABEL SRC IMATRIX TYPE [ARGS...]: both quantizers, then the table
run() {
  local label=$1 src=$2 imat=$3 type=$4; shift 4
  local lower; lower=$(echo "$type" | tr A-Z a-z)
  local t0 t1 t2
  t0=$(date +%s.%N)
  "$bin" quantize --threads "$threads" --imatrix "$imat" "$@" "$tmp/$src-f32.gguf" "$tmp/ours-$label.gguf" "$lower" \
    >/dev/null 2>"$tmp/ours-$label.err"
  t1=$(date +%s.%N)
  "$LLAMA_BIN/llama-quantize" --imatrix "$imat" "$@" "$tmp/$src-f32.gguf" "$tmp/theirs-$label.gguf" "$type" "$threads" \
    >"$tmp/theirs-$label.log" 2>&1
  t2=$(date +%s.%N)
  "$cmp" "$tmp/$src-f32.gguf" "$tmp/ours-$label.gguf" "$tmp/theirs-$label.gguf" "$imat" >"$tmp/$label.md"
  {
    echo "### $label ($src fixture$( [ $# -gt 0 ] && printf ', %s' "$*"))"
    echo
    cat "$tmp/$label.md"
    echo
  } >>"$out.tmp"
  tail -n 1 "$tmp/$label.md" | awk -F'|' -v l="$label" -v s="$src" -v a="$(echo "$t1 - $t0" | bc)" \
    -v b="$(echo "$t2 - $t1" | bc)" '{printf "| %s | %s |%s|%s|%s|%s|%s|%s| %.1f | %.1f |\n", l, s, $5, $6, $7, $8, $9, $10, a, b}' \
    >>"$summary"
}

for t in IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_XS IQ3_S IQ3_M; do
  run "$t" dense "$im" "$t"
done
run MXFP4_MOE moe "$tmp/moe-imatrix.gguf" MXFP4_MOE
run mix-dynamic moe "$tmp/moe-imatrix.gguf" IQ2_XXS --tensor-type 'ffn_.*_exps=iq2_xxs' --tensor-type 'attn_.*=q4_k' \
  --token-embedding-type q6_k --output-tensor-type q8_0
run mix-dense dense "$im" IQ2_XXS --tensor-type 'ffn_(up|gate)=iq2_xxs' --tensor-type 'ffn_down=iq3_xxs' \
  --tensor-type 'attn_.*=q4_k' --token-embedding-type q6_k --output-tensor-type q8_0
run mix-kquants dense "$im" Q4_K_M --tensor-type 'attn_q=q2_k' --tensor-type 'attn_k=q3_k' \
  --tensor-type 'attn_v=q5_k' --tensor-type 'attn_output=q6_k' --tensor-type 'blk\.0\.ffn_.*=q4_0' \
  --tensor-type 'blk\.1\.ffn_.*=q4_1' --tensor-type 'blk\.2\.ffn_.*=q5_0' --tensor-type 'blk\.3\.ffn_.*=q5_1'

{
  echo "## Summary"
  echo
  cat "$summary"
  echo
  cat "$out.tmp"
} >"$out"
rm -f "$out.tmp"
cat "$summary"
