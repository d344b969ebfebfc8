#!/usr/bin/env bash
# serve's start-up memory commit (docs/SERVER.md "Memory"): by default every
# slot's KV cache and the hidden rows its EAGLE-3 head reads are resident as
# soon as the server listens; --no-commit-memory leaves them to come in as
# they are first written. Measured as VmRSS (/proc/PID/status) right after
# "listening", against the bytes the fixture's metadata says those buffers
# take: with the opt-out the RSS must be lower by at least 90% of the KV
# caches plus the hidden rows; a server whose default drafts without a head
# (--spec ngram) must be lower by at least 90% of the hidden rows alone. The
# opt-out changes no answer. And a stream read only after its whole answer is
# generated (slow_reader_client.py) has the non-streamed text, in fewer events
# than tokens: what a lagging client has not read is held merged.
. "$(dirname "$0")/lib.sh"

MT=models/fixture-target.gguf
HEAD=models/fixture-eagle3.gguf
N_CTX=4096
PAR=2
meta() { "$BIN" inspect "$1" | awk -v k="$2" '$1 == k { print $3 }'; }
n_layer=$(meta $MT qwen3.block_count)
n_kv=$(meta $MT qwen3.attention.head_count_kv)
kl=$(meta $MT qwen3.attention.key_length)
vl=$(meta $MT qwen3.attention.value_length)
n_embd=$(meta $MT qwen3.embedding_length)
n_ids=$("$BIN" inspect $HEAD | sed -n 's/^ *eagle3.target_layers .*\[i32 x \([0-9]*\)\].*/\1/p')
for v in "$n_layer" "$n_kv" "$kl" "$vl" "$n_embd" "$n_ids"; do
  [[ "$v" =~ ^[0-9]+$ ]] || { echo "could not read the fixture's metadata ('$v')"; exit 1; }
done
kv_kb=$((N_CTX * PAR * n_layer * n_kv * (kl + vl) * 2 / 1024))  # f16 K and V (--cache-type-k/-v below)
hid_kb=$((N_CTX * PAR * n_ids * n_embd * 4 / 1024))            # one float row per layer id and position
echo "KV caches ${kv_kb} kB, hidden rows ${hid_kb} kB"

SERVE=(-m $MT -md $HEAD -t 1 -c $N_CTX --parallel $PAR --cache-type-k f16 --cache-type-v f16 --cache-ram 0)
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
complete() {
  curl -sf "$BASE/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": "def add(a, b):", "max_tokens": 24, "temperature": 0}' |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["choices"][0]["text"])'
}

start_server "${SERVE[@]}" --spec eagle3
a_kb=$(rss_kb "$SERVER_PID")
want=$(complete)
# A stream read only once its answer is generated: the same text, its backlog merged.
# It needs ~2 MB of events to fill the socket buffers (1500 tokens): not under the
# sanitizers (SD_ASAN, ~100x slower), where the never-reader of server_limits
# still run the merge.
if [ -z "${SD_ASAN:-}" ]; then
  python3 tests/server/slow_reader_client.py "$BASE" || { echo "FAIL: the late-read stream"; exit 1; }
fi
stop_server "$SERVER_PID"

start_server "${SERVE[@]}" --spec eagle3 --no-commit-memory
b_kb=$(rss_kb "$SERVER_PID")
got=$(complete)
stop_server "$SERVER_PID"

start_server "${SERVE[@]}" --spec ngram
c_kb=$(rss_kb "$SERVER_PID")
stop_server "$SERVER_PID"

echo "RSS after start: committed ${a_kb} kB, --no-commit-memory ${b_kb} kB, --spec ngram ${c_kb} kB"
fail=0
if [ $((a_kb - b_kb)) -lt $(((kv_kb + hid_kb) * 9 / 10)) ]; then
  echo "FAIL: --no-commit-memory saved $((a_kb - b_kb)) kB, want >= 90% of $((kv_kb + hid_kb)) kB"; fail=1
fi
if [ $((a_kb - c_kb)) -lt $((hid_kb * 9 / 10)) ]; then
  echo "FAIL: the EAGLE-3 hidden rows added $((a_kb - c_kb)) kB at start, want >= 90% of ${hid_kb} kB"; fail=1
fi
if [ -z "$want" ] || [ "$got" != "$want" ]; then
  echo "FAIL: the answer with --no-commit-memory differs: '$got' vs '$want'"; fail=1
fi
"$BIN" serve --help | grep -q -- "--no-commit-memory" || { echo "FAIL: --no-commit-memory not in --help"; fail=1; }
[ $fail = 0 ] && echo "ok"
exit $fail
