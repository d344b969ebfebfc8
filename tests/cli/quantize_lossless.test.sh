#!/usr/bin/env bash
# The fixture target quantized to each low-bit mixed file type (Q2_K,
# Q3_K_S/M/L, IQ4_NL, IQ4_XS: every kernel of those block formats runs in
# the forward) still decodes speculatively byte for byte as greedy does:
# `generate --spec auto` must report LOSSLESS n/n, and the file must carry
# the mix's types (inspect).
set -euo pipefail
bin=${SD_SPECDEC_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f models/fixture-target.gguf ] || fail "models/fixture-target.gguf is missing (it is committed: run from the repository root)"

prompt=$'class Parser:\n    def __init__(self, text):'
for t in q2_k:q2_K q3_k_s:q3_K q3_k_m:q3_K q3_k_l:q3_K iq4_nl:iq4_nl iq4_xs:iq4_xs; do
  name=${t%%:*}; base=${t##*:}
  "$bin" quantize --threads 2 models/fixture-target.gguf "$tmp/$name.gguf" "$name" >/dev/null
  "$bin" inspect "$tmp/$name.gguf" >"$tmp/inspect" || fail "$name: inspect failed"
  grep -qw "$base" "$tmp/inspect" || fail "$name: no $base tensor in the file"
  grep -qw "q6_K" "$tmp/inspect" || fail "$name: output.weight is not q6_K"
  "$bin" generate -m "$tmp/$name.gguf" -md models/fixture-draft.gguf --spec auto -p "$prompt" -n 48 -t 2 \
    >"$tmp/text" 2>"$tmp/stats" || { cat "$tmp/stats" >&2; fail "$name: generate failed"; }
  grep -q "LOSSLESS 48/48" "$tmp/stats" || { cat "$tmp/stats" >&2; fail "$name: not lossless"; }
  [ -s "$tmp/text" ] || fail "$name: no text"
done
echo "quantize_lossless.test.sh: ok"
