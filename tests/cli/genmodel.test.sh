#!/usr/bin/env bash
# sd-genmodel: writes a loadable-looking tiny qwen3 GGUF with the real Qwen
# tokenizer, rejects shapes a type cannot hold, and is reproducible per seed.
set -euo pipefail
gen="${SD_BUILD_DIR:?}/sd-genmodel"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$gen" --shape tiny --type q8_0 -o "$tmp/a.gguf" 2>/dev/null
"$gen" --shape tiny --type q8_0 -o "$tmp/b.gguf" 2>/dev/null
"$gen" --shape tiny --type q8_0 --seed 9 -o "$tmp/c.gguf" 2>/dev/null
[ "$(head -c 4 "$tmp/a.gguf")" = "GGUF" ] || { echo "no GGUF magic"; exit 1; }
cmp -s "$tmp/a.gguf" "$tmp/b.gguf" || { echo "same seed, different files"; exit 1; }
if cmp -s "$tmp/a.gguf" "$tmp/c.gguf"; then echo "different seeds, same file"; exit 1; fi
# 151936 x 64 q8_0 embedding alone is 10.3 MB: the real vocabulary made it in
size=$(stat -c %s "$tmp/a.gguf")
[ "$size" -gt 10000000 ] || { echo "file too small: $size"; exit 1; }
grep -q "tokenizer.ggml.merges" "$tmp/a.gguf" || { echo "tokenizer metadata missing"; exit 1; }
grep -q "blk.1.ffn_down.weight" "$tmp/a.gguf" || { echo "layer tensors missing"; exit 1; }
# q4_k needs rows of 256: the tiny shape (64 wide) must be refused, exit 1
set +e
"$gen" --shape tiny --type q4_k -o "$tmp/d.gguf" 2>"$tmp/err"; rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "q4_k tiny: expected exit 1, got $rc"; exit 1; }
[ ! -e "$tmp/d.gguf" ] || { echo "q4_k tiny: left a file behind"; exit 1; }
# qwen35 (hybrid) shape: GDN and gated-attention layers from the interval, an MTP block,
# the qwen35 vocabulary; reproducible per seed like the qwen3 shapes
"$gen" --shape qwen35-tiny --type q8_0 -o "$tmp/q.gguf" 2>/dev/null
"$gen" --shape qwen35-tiny --type q8_0 -o "$tmp/r.gguf" 2>/dev/null
cmp -s "$tmp/q.gguf" "$tmp/r.gguf" || { echo "qwen35: same seed, different files"; exit 1; }
for s in qwen35.block_count qwen35.nextn_predict_layers qwen35.ssm.time_step_rank qwen35.ssm.group_count \
         qwen35.attention.recurrent_layers qwen35.rope.dimension_sections blk.0.ssm_a blk.2.ssm_conv1d.weight \
         blk.3.attn_q_norm.weight blk.4.nextn.eh_proj.weight blk.4.attn_q.weight; do
  grep -q "$s" "$tmp/q.gguf" || { echo "qwen35: $s missing"; exit 1; }
done
# layer 3 is full attention ((3+1) % 4 == 0): no GDN tensors there
if grep -q "blk.3.ssm_a" "$tmp/q.gguf"; then echo "qwen35: layer 3 has GDN tensors"; exit 1; fi
grep -q "qwen35" "$tmp/q.gguf" || { echo "qwen35: vocabulary pre-tokenizer missing"; exit 1; }
# usage errors exit 2
set +e; "$gen" --shape nope --type q8_0 -o "$tmp/e.gguf" 2>/dev/null; rc=$?; set -e
[ "$rc" -eq 2 ] || { echo "bad shape: expected exit 2, got $rc"; exit 1; }
# --grow: a non-qwen3 file is refused with one line, exit 1; an unknown shape is a usage error
set +e
"$gen" --grow tests/data/tokenizer/ggml-vocab-qwen2.gguf --shape tiny -o "$tmp/g.gguf" 2>"$tmp/err"; rc=$?
set -e
[ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "qwen3 models only" "$tmp/err" ||
  { echo "grow non-qwen3: expected one line and exit 1, got $rc: $(cat "$tmp/err")"; exit 1; }
set +e; "$gen" --grow models/fixture-draft.gguf --shape nope -o "$tmp/h.gguf" 2>/dev/null; rc=$?; set -e
[ "$rc" -eq 2 ] || { echo "grow bad shape: expected exit 2, got $rc"; exit 1; }
# --grow into a qwen35 shape: a qwen3 file is refused with one line, exit 1; --dry-run plans the 27B
# shape (its file size and the real model's weights per token) and writes nothing
set +e
"$gen" --grow models/fixture-target.gguf --shape qwen35-tiny -o "$tmp/q35.gguf" 2>"$tmp/err"; rc=$?
set -e
[ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "needs a qwen35 model" "$tmp/err" && [ ! -e "$tmp/q35.gguf" ] ||
  { echo "grow qwen3 into qwen35: expected one line and exit 1, got $rc: $(cat "$tmp/err")"; exit 1; }
"$gen" --grow models/fixture-q35-target.gguf --shape qwen35-27b --type q4_k --dry-run 2>"$tmp/err"
grep -q "the file will take 14.6[0-9] GB" "$tmp/err" && grep -q "real model's 25622.0 M" "$tmp/err" ||
  { echo "grow --dry-run 27b: $(cat "$tmp/err")"; exit 1; }
# MoE with pooled expert rows and their own type: reproducible, the experts in q4_0 and the rest in q8_0,
# each expert row one of the pool's (so two experts' rows repeat), and the file loads and decodes
"$gen" --shape qwen3moe-tiny --type q8_0 --expert-type q4_0 --expert-pool 16 -o "$tmp/m.gguf" 2>/dev/null
"$gen" --shape qwen3moe-tiny --type q8_0 --expert-type q4_0 --expert-pool 16 -o "$tmp/n.gguf" 2>/dev/null
cmp -s "$tmp/m.gguf" "$tmp/n.gguf" || { echo "pooled: same seed, different files"; exit 1; }
inspect=$("${SD_BUILD_DIR}/specdec" inspect "$tmp/m.gguf")
grep -Eq "blk.1.ffn_down_exps.weight +q4_0 +\[32, 64, 8\]" <<<"$inspect" &&
  grep -Eq "blk.1.attn_q.weight +q8_0" <<<"$inspect" && grep -q "experts q4_0" <<<"$inspect" ||
  { echo "pooled: types not as asked"; exit 1; }
/usr/bin/python3 - "$tmp/m.gguf" <<'PY' || { echo "pooled: expert rows are not drawn from a 16-row pool"; exit 1; }
import sys
sys.path.insert(0, "tools/reference")
from torch_ref import GGUF  # noqa: E402  (its header reader)
g = GGUF(sys.argv[1])
ne, typ, off = g.tensors["blk.0.ffn_up_exps.weight"]
rb = 18 * 64 // 32                        # a q4_0 row of 64: 2 blocks of 18 bytes
start = g.data_start + off
rows = {bytes(g.data[start + i * rb:start + (i + 1) * rb]) for i in range(32 * 8)}
sys.exit(0 if typ == 2 and 2 <= len(rows) <= 16 else 1)
PY
"${SD_BUILD_DIR}/specdec" generate -m "$tmp/m.gguf" -p "Hello" -n 8 --spec none >/dev/null 2>&1 ||
  { echo "pooled: the file does not decode"; exit 1; }
for bad in "--shape tiny --expert-pool 16" "--shape qwen3moe-tiny --expert-pool 3" \
           "--shape qwen3moe-tiny --expert-type nope"; do
  set +e; "$gen" $bad -o "$tmp/x.gguf" 2>"$tmp/err"; rc=$?; set -e
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "'$bad': expected one line and exit 2, got $rc"; exit 1; }
done
echo "genmodel ok"
