#!/usr/bin/env bash
# `specdec quantize` into the importance-matrix file types, with llama.cpp's
# imatrix files (tests/data/iq/imatrix.gguf and the legacy imatrix.dat, both
# from llama-imatrix on the fixture; make.sh):
#  - each file type loads, carries its types (inspect), and decodes greedily
#    with speculation byte for byte (LOSSLESS n/n): iq1_s, iq1_m, iq2_xxs, iq2_s (IQ2_XS +
#    IQ3_S), iq2_m (IQ2_S), iq3_xs (IQ3_S + IQ3_XXS), and mxfp4_moe on the
#    MoE fixture (MXFP4 experts), so every new quantizer runs;
#  - the imatrix-weighted error against the Q8_0 source (sd-quant_compare)
#    is no worse than llama-quantize's own IQ2_XXS / IQ3_XXS files of that
#    source and imatrix (committed in tests/data/iq), and the others stay
#    under 3 x 2^-4, the Gaussian bound at 2 bits times 3 (test_iq_quantize),
#    iq1_s under 3 x 2^-3.125 (its 1.5625 bits), iq1_m under 3 x 2^-3.5 (its
#    1.75 bits);
#  - the .dat and the GGUF form of one calibration both load and write the
#    same types;
#  - per-tensor overrides land where they say; a row that a type cannot take
#    is named as a fallback;
#  - hostile importance matrices (truncated, a wrong count, NaN, a size that
#    does not fit its tensor) and bad overrides: exit 1 or 2 with one line.
set -euo pipefail
bin=${SD_SPECDEC_BIN:?}
cmp=${SD_BUILD_DIR:?}/sd-quant_compare
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
d=tests/data/iq
[ -f "$d/imatrix.gguf" ] || fail "$d/imatrix.gguf is missing (run from the repository root)"
prompt=$'class Parser:\n    def __init__(self, text):'

# all_e FILE THEIRS: the weighted error of FILE in sd-quant_compare's last row
all_e() { "$cmp" models/fixture-target.gguf "$1" "$2" "$d/imatrix.gguf" | tail -n 1 | awk -F'|' '{print $8, $9}'; }

types="iq1_s:iq1_s iq1_m:iq1_m iq2_xxs:iq2_xxs iq2_s:iq2_xs iq2_m:iq2_s iq3_xs:iq3_xxs"
# under the sanitizers (scripts/test.sh --asan) one file type, its comparison and the hostile files: the
# grid search runs ~10x slower there
full=1
[ -n "${SD_ASAN:-}" ] && { types="iq2_xxs:iq2_xxs"; full=; }
for t in $types; do
  name=${t%%:*}; want=${t##*:}
  "$bin" quantize --threads 2 --imatrix "$d/imatrix.gguf" models/fixture-target.gguf "$tmp/$name.gguf" "$name" \
    >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "$name: quantize failed"; }
  "$bin" inspect "$tmp/$name.gguf" >"$tmp/inspect" || fail "$name: inspect failed"
  grep -qw "$want" "$tmp/inspect" || fail "$name: no $want tensor"
  # llama.cpp's IQ1_S / IQ1_M mixes put attn_output in IQ2_XXS
  case $name in iq1_*) grep -E 'attn_output.weight' "$tmp/inspect" | grep -vqw iq2_xxs && fail "$name: attn_output not iq2_xxs";; esac
  "$bin" generate -m "$tmp/$name.gguf" -md models/fixture-draft.gguf --spec auto -p "$prompt" -n 32 -t 2 \
    >"$tmp/text" 2>"$tmp/stats" || { cat "$tmp/stats" >&2; fail "$name: generate failed"; }
  grep -q "LOSSLESS 32/32" "$tmp/stats" || { cat "$tmp/stats" >&2; fail "$name: not lossless"; }
  [ -s "$tmp/text" ] || fail "$name: no text"
done
[ -z "$full" ] || grep -qw iq3_s "$tmp/inspect" || fail "iq3_xs: no iq3_s tensor"

for t in IQ2_XXS ${full:+IQ3_XXS}; do
  lower=$(echo "$t" | tr A-Z a-z)
  [ -f "$tmp/$lower.gguf" ] || "$bin" quantize --threads 2 --imatrix "$d/imatrix.gguf" models/fixture-target.gguf \
    "$tmp/$lower.gguf" "$lower" >/dev/null 2>&1
  read -r ours theirs < <(all_e "$tmp/$lower.gguf" "$d/fixture-target-$t.gguf")
  echo "$t: weighted error ours $ours, llama-quantize's $theirs"
  awk -v a="$ours" -v b="$theirs" 'BEGIN { exit !(a > 0 && a <= b) }' || fail "$t: error $ours above llama.cpp's $theirs"
done
for name in iq2_s iq2_m iq3_xs; do
  [ -f "$tmp/$name.gguf" ] || continue
  read -r ours _ < <(all_e "$tmp/$name.gguf" "$tmp/$name.gguf")
  awk -v a="$ours" 'BEGIN { exit !(a > 0 && a <= 3 / 16) }' || fail "$name: error $ours above 3/16"
done
if [ -f "$tmp/iq1_s.gguf" ]; then
  read -r ours _ < <(all_e "$tmp/iq1_s.gguf" "$tmp/iq1_s.gguf")
  awk -v a="$ours" 'BEGIN { exit !(a > 0 && a <= 3 * 2 ^ -3.125) }' || fail "iq1_s: error $ours above 3 x 2^-3.125"
fi
if [ -f "$tmp/iq1_m.gguf" ]; then
  read -r ours _ < <(all_e "$tmp/iq1_m.gguf" "$tmp/iq1_m.gguf")
  awk -v a="$ours" 'BEGIN { exit !(a > 0 && a <= 3 * 2 ^ -3.5) }' || fail "iq1_m: error $ours above 3 x 2^-3.5"
fi

if [ -n "$full" ]; then
# the legacy .dat form: same types as the GGUF form
"$bin" quantize --threads 2 --imatrix "$d/imatrix.dat" models/fixture-target.gguf "$tmp/dat.gguf" iq2_xxs >/dev/null 2>&1 \
  || fail "quantize with imatrix.dat failed"
"$bin" inspect "$tmp/dat.gguf" | grep -E '^  (blk|token|output)' | awk '{print $1, $2}' >"$tmp/t1"
"$bin" inspect "$tmp/iq2_xxs.gguf" | grep -E '^  (blk|token|output)' | awk '{print $1, $2}' >"$tmp/t2"
cmp -s "$tmp/t1" "$tmp/t2" || fail ".dat and .gguf imatrix give different types"

# MXFP4_MOE on the MoE fixture: experts MXFP4, the rest Q8_0
"$bin" quantize --threads 2 models/fixture-moe-target.gguf "$tmp/mx.gguf" mxfp4_moe >/dev/null 2>&1 || fail "mxfp4_moe failed"
"$bin" inspect "$tmp/mx.gguf" >"$tmp/inspect"
grep -E 'ffn_(gate|up|down)_exps' "$tmp/inspect" | grep -vqw mxfp4 && fail "mxfp4_moe: an expert tensor is not mxfp4"
grep -E 'attn_q.weight' "$tmp/inspect" | grep -qw q8_0 || fail "mxfp4_moe: attn_q is not q8_0"
"$bin" generate -m "$tmp/mx.gguf" -md models/fixture-draft.gguf --spec auto -p "$prompt" -n 32 -t 2 \
  >"$tmp/text" 2>"$tmp/stats" || { cat "$tmp/stats" >&2; fail "mxfp4_moe: generate failed"; }
grep -q "LOSSLESS 32/32" "$tmp/stats" || { cat "$tmp/stats" >&2; fail "mxfp4_moe: not lossless"; }

# a dynamic-style mix: experts IQ2_XXS (ffn_down_exps rows are 64: IQ4_NL, named), attention Q4_K,
# embeddings Q6_K, output Q8_0 (the fixture ties its output to token_embd; as in llama.cpp,
# --token-embedding-type then wins for that one tensor)
"$bin" quantize --threads 2 --tensor-type 'ffn_.*_exps=iq2_xxs' --tensor-type 'attn_.*=q4_k' \
  --token-embedding-type q6_k --output-tensor-type q8_0 models/fixture-moe-target.gguf "$tmp/mix.gguf" iq2_xxs \
  >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "mix failed"; }
grep -q "fell back.*ffn_down_exps.weight (row 64) iq2_xxs->iq4_nl" "$tmp/err" || { cat "$tmp/err" >&2; fail "fallback not named"; }
"$bin" inspect "$tmp/mix.gguf" >"$tmp/inspect"
grep -E 'ffn_(gate|up)_exps' "$tmp/inspect" | grep -vqw iq2_xxs && fail "mix: an expert is not iq2_xxs"
grep -E 'attn_(q|k|v|output).weight' "$tmp/inspect" | grep -vqw q4_K && fail "mix: attention is not q4_K"
grep -E '^  token_embd.weight' "$tmp/inspect" | grep -qw q6_K || fail "mix: token_embd is not q6_K"
grep -qE '^  output.weight' "$tmp/inspect" && fail "mix: the tied fixture gained an output.weight"
"$bin" generate -m "$tmp/mix.gguf" -md models/fixture-draft.gguf --spec auto -p "$prompt" -n 32 -t 2 \
  >"$tmp/text" 2>"$tmp/stats" || { cat "$tmp/stats" >&2; fail "mix: generate failed"; }
grep -q "LOSSLESS 32/32" "$tmp/stats" || { cat "$tmp/stats" >&2; fail "mix: not lossless"; }
fi

# hostile importance matrices and bad options: one line, no output file
expect_err() { # expect_err RC WORDS ARGS...
  local want=$1 words=$2; shift 2
  set +e; "$bin" quantize --threads 2 "$@" models/fixture-target.gguf "$tmp/bad.gguf" iq2_xxs >/dev/null 2>"$tmp/err"; local rc=$?; set -e
  [ "$rc" = "$want" ] || { cat "$tmp/err" >&2; fail "exit $rc, wanted $want: $*"; }
  [ "$(wc -l <"$tmp/err")" = 1 ] || { cat "$tmp/err" >&2; fail "stderr is not one line: $*"; }
  grep -qi "$words" "$tmp/err" || { cat "$tmp/err" >&2; fail "the error does not say '$words': $*"; }
  [ ! -e "$tmp/bad.gguf" ] || fail "an output file was left: $*"
}
head -c 20000 "$d/imatrix.gguf" >"$tmp/trunc.gguf"
expect_err 1 "imatrix\|truncat" --imatrix "$tmp/trunc.gguf"
head -c 5000 "$d/imatrix.dat" >"$tmp/trunc.dat"
expect_err 1 "truncated" --imatrix "$tmp/trunc.dat"
$py - "$d/imatrix.dat" "$tmp" <<'PY'
import struct, sys
src, tmp = sys.argv[1], sys.argv[2]
b = bytearray(open(src, 'rb').read())
n = struct.unpack_from('<i', b, 0)[0]
ln = struct.unpack_from('<i', b, 4)[0]
name = bytes(b[8:8 + ln])
at = 8 + ln + 4  # ncall
nval = struct.unpack_from('<i', b, at)[0]
# a value made NaN
nan = bytearray(b); struct.pack_into('<f', nan, at + 4, float('nan')); open(tmp + '/nan.dat', 'wb').write(nan)
# a count larger than the file
big = bytearray(b); struct.pack_into('<i', big, at, 1 << 30); open(tmp + '/count.dat', 'wb').write(big)
# one entry whose size does not fit its tensor: the first entry cut to 7 values
one = struct.pack('<i', 1) + struct.pack('<i', ln) + name + struct.pack('<ii', 1, 7) + b''.join(struct.pack('<f', 1.0) for _ in range(7))
open(tmp + '/size.dat', 'wb').write(one)
PY
expect_err 1 "finite" --imatrix "$tmp/nan.dat"
expect_err 1 "values" --imatrix "$tmp/count.dat"
expect_err 1 "needs" --imatrix "$tmp/size.dat"
expect_err 1 "cannot open" --imatrix "$tmp/missing.dat"
expect_err 1 "PATTERN=TYPE" --tensor-type 'attn_q'
expect_err 1 "type 'q9_9'" --tensor-type 'attn_q=q9_9'
expect_err 1 "regular expression" --tensor-type '(=q4_k'
expect_err 1 "token-embedding-type" --token-embedding-type bogus
set +e; "$bin" quantize models/fixture-target.gguf "$tmp/bad.gguf" iq2_xxs --imatrix >/dev/null 2>"$tmp/err"; rc=$?; set -e
[ "$rc" = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "needs a value" "$tmp/err" || fail "--imatrix without a value"
echo "quantize_iq.test.sh: ok"
