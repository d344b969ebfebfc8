#!/usr/bin/env bash
# Makes the files of this directory (run from the repository root):
#   LLAMA_BIN=DIR tests/data/iq/make.sh
# DIR holds llama.cpp's built llama-imatrix and llama-quantize; node and
# bench/vs-llamacpp/node_modules (node-llama-cpp) give llama.cpp's greedy ids.
#  1. calib.txt: the calibration text (committed; it was the head of
#     docs/ARCHITECTURE.md, docs/MODELS.md and README.md, 60000 bytes at most).
#  2. imatrix.gguf: llama-imatrix over calib.txt on models/fixture-target.gguf;
#     imatrix.dat: the same in the legacy format, 8 chunks (the quantizer's tests
#     read both forms).
#  3. fixture-target-TYPE.gguf: llama-quantize --allow-requantize --imatrix of
#     the Q8_0 fixture into llama.cpp's file types IQ2_XXS and IQ3_XXS (every
#     matrix row is 256 or 768 wide, so each tensor may carry an IQ type).
#     fixture-target-FTYPE-mix.gguf: llama.cpp's file types IQ2_M and IQ3_M with
#     per-tensor overrides in the style of the published "dynamic" mixes
#     (embeddings, attention and FFN up/gate/down each their own type), so that
#     between them iq1_s, iq1_m, iq2_xs, iq2_s, iq3_s and mxfp4 each carry at
#     least four tensors (the token embedding is also the tied output).
#  4. llamacpp_ids.txt: per file and bench/prompts prompt, llama.cpp's prompt
#     ids and its 32 greedy ids (bench/vs-llamacpp/greedy_ids.mjs, 1 thread).
set -euo pipefail
d=tests/data/iq
: "${LLAMA_BIN:?LLAMA_BIN=DIR with llama-imatrix and llama-quantize}"
"$LLAMA_BIN/llama-imatrix" -m models/fixture-target.gguf -f "$d/calib.txt" -o "$d/imatrix.gguf" -c 256 -t 2
"$LLAMA_BIN/llama-imatrix" -m models/fixture-target.gguf -f "$d/calib.txt" -o "$d/imatrix.dat" --output-format dat \
  -c 256 -t 1 --chunks 8
for t in IQ2_XXS IQ3_XXS; do
  "$LLAMA_BIN/llama-quantize" --allow-requantize --imatrix "$d/imatrix.gguf" models/fixture-target.gguf \
    "$d/fixture-target-$t.gguf" "$t" 2
done
q=("$LLAMA_BIN/llama-quantize" --allow-requantize --imatrix "$d/imatrix.gguf")
"${q[@]}" --token-embedding-type iq3_s --tensor-type attn_q=mxfp4 --tensor-type ffn_gate=iq1_s \
  --tensor-type ffn_up=iq1_m --tensor-type ffn_down=iq2_xs models/fixture-target.gguf "$d/fixture-target-IQ2_M-mix.gguf" IQ2_M 2
"${q[@]}" --token-embedding-type iq2_s --tensor-type 'blk\.[01]\.ffn_(gate|up)=iq1_m' \
  --tensor-type 'blk\.[23]\.ffn_(gate|up)=iq1_s' --tensor-type attn_output=mxfp4 \
  models/fixture-target.gguf "$d/fixture-target-IQ3_M-mix.gguf" IQ3_M 2
: > "$d/llamacpp_ids.txt"
for t in IQ2_XXS IQ3_XXS IQ2_M-mix IQ3_M-mix; do
  for f in bench/prompts/*.txt; do
    if head -n 1 "$f" | grep -q '^class:'; then p=$(tail -n +2 "$f"); else p=$(cat "$f"); fi
    ids=$(SHOW_PROMPT_IDS=1 node bench/vs-llamacpp/greedy_ids.mjs "$d/fixture-target-$t.gguf" "$p" 32 1 2> "$d/.err")
    pids=$(sed -n 's/^prompt ids: //p' "$d/.err" | tr ' ' ',')
    echo "$t $(basename "$f" .txt) $pids $ids" >> "$d/llamacpp_ids.txt"
  done
done
rm -f "$d/.err"
