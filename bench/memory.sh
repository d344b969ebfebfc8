#!/usr/bin/env bash
# Peak RSS, load time and decode speed of a short generate, ours against
# llama.cpp's load time, in alternated rounds (issue 15, memory part):
#   bench/memory.sh [-r ROUNDS] [-a ARGS] MODEL.gguf [SPECDEC_BIN...]
# Each round runs, for every specdec binary given (default build/specdec; the
# last one must have inspect --no-load),
#   /usr/bin/time -v BIN generate -m MODEL -p "..." -n 16 --spec none -c 256 -t 2 --json
# (peak RSS = "Maximum resident set size"; load_s, decode_tok_s and the
# weights' resident bytes from --json), then node vs-llamacpp/load_time.mjs
# (loadModel + createContext, 2 threads, context 256; its peak RSS too, the
# node process's, by /usr/bin/time -v). Prints one line per
# binary and one for llama.cpp with medians over the rounds, and the KV
# cache the run touched: 17 positions (1 prompt + 16 generated) x n_layer x
# 2 (K, V) x n_head_kv x head_dim x 2 bytes (f16), rounded up to whole pages
# per layer and K/V (n_ctx-major layout, src/model/context.c), from inspect;
# a hybrid model (qwen35) has KV only in its attention layers, and its
# recurrent state (f32, all of it touched) is subtracted too. -a ARGS adds
# generate flags (e.g. -a "--spec ngram"). The file is read once first, so
# the page cache is warm for both engines.
# Run it under `flock /work/bench.lock` on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5
extra=""
while [ $# -gt 0 ]; do
  case "$1" in -r) rounds=$2; shift 2;; -a) extra=$2; shift 2;; *) break;; esac
done
model=${1:?usage: bench/memory.sh [-r ROUNDS] MODEL.gguf [SPECDEC_BIN...]}; shift
bins=("$@"); [ ${#bins[@]} -gt 0 ] || bins=(build/specdec)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat "$model" >/dev/null # warm page cache for both
for r in $(seq "$rounds"); do
  for i in "${!bins[@]}"; do
    /usr/bin/time -v "${bins[$i]}" generate -m "$model" -p "The quick brown fox" -n 16 --spec none -c 256 -t 2 \
      $extra --json >"$tmp/o.json" 2>"$tmp/e.txt"
    rss=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$tmp/e.txt")
    /usr/bin/python3 - "$tmp/o.json" "$rss" >>"$tmp/ours-$i" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
nan = float("nan")
print(sys.argv[2], d.get("load_s", nan), d.get("decode_tok_s") or nan, d.get("weights_resident_bytes") or 0)
PY
    echo "round $r ${bins[$i]}: $(tail -1 "$tmp/ours-$i")" >&2
  done
  (cd bench/vs-llamacpp && /usr/bin/time -v node load_time.mjs "$(realpath "../../$model" 2>/dev/null || realpath "$model")" 2 256) \
    >"$tmp/l.json" 2>"$tmp/le.txt"
  lrss=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$tmp/le.txt")
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["load_s"], sys.argv[2])' "$tmp/l.json" "$lrss" >>"$tmp/llama"
  echo "round $r llama.cpp: $(tail -1 "$tmp/llama")" >&2
done
/usr/bin/python3 - "$model" "$tmp" "${#bins[@]}" "${bins[@]}" <<'PY'
import json, os, statistics as st, subprocess, sys
model, tmp, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
bins = sys.argv[4:4 + n]
size = os.path.getsize(model)
meta = json.loads(subprocess.run([bins[-1], "inspect", "--json", model], capture_output=True, text=True).stdout)
kv = {m["key"].split(".", 1)[1]: m.get("value") for m in meta["metadata"] if m["key"].startswith(meta["architecture"] + ".")}
n_layer, n_kv, hd = kv["block_count"], kv.get("attention.head_count_kv", kv["attention.head_count"]), kv.get("attention.key_length", kv["embedding_length"] // kv["attention.head_count"])
hyb = meta.get("hybrid")
if isinstance(n_kv, list): n_kv = max(n_kv)  # per-layer head counts (hybrid): the attention layers'
rec = hyb["recurrent_bytes"] if hyb else 0
if hyb: n_layer = hyb["n_layer"] - hyb["n_layer_gdn"]  # attention layers only hold KV
page = os.sysconf("SC_PAGE_SIZE")
per = 17 * n_kv * hd * 2
kv_touched = n_layer * 2 * ((per + page - 1) // page + 1) * page + rec  # +1: a range need not start on a page
print(f"file {size} bytes ({size / 2**20:.1f} MiB); KV touched <= {kv_touched / 2**20:.2f} MiB"
      + (f" (incl. recurrent state {rec / 2**20:.2f} MiB, {n_layer} attention layers)" if hyb else ""))
for i, b in enumerate(bins):
    rows = [l.split() for l in open(f"{tmp}/ours-{i}")]
    rss = st.median(int(r[0]) * 1024 for r in rows)
    print(f"{b}: peak RSS {rss / 2**20:.1f} MiB, less KV {(rss - kv_touched) / size:.3f}x file | load {st.median(float(r[1]) for r in rows):.3f} s"
          f" | decode {st.median(float(r[2]) for r in rows):.2f} tok/s | weights resident {st.median(int(r[3]) for r in rows) / 2**20:.1f} MiB"
          f" | rounds {len(rows)}: rss {[int(r[0]) // 1024 for r in rows]} MiB, load {[round(float(r[1]), 2) for r in rows]}, decode {[round(float(r[2]), 1) for r in rows]}")
ll = [l.split() for l in open(f"{tmp}/llama")]
lrss = st.median(int(r[1]) * 1024 for r in ll)
print(f"llama.cpp (node-llama-cpp): peak RSS {lrss / 2**20:.1f} MiB of the node process, {lrss / size:.3f}x file"
      f" | load {st.median(float(r[0]) for r in ll):.3f} s (loadModel + createContext) | rounds {[round(float(r[0]), 2) for r in ll]}")
PY
