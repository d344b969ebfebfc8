#!/usr/bin/env bash
# A model larger than the memory it may use, run by specdec and by llama.cpp
# under the same limit: a memory cgroup (v1 `memory.limit_in_bytes`, or v2
# `memory.max`) made under the caller's own group, the file's pages dropped
# from the page cache before each run (POSIX_FADV_DONTNEED) so that they are
# read, and charged to the limited group, again. Prints each engine's decode
# tok/s, peak memory of the group and the process, and whether it ran to the
# end. Needs root (to make the group) and llama-server (build_llamacpp.sh).
#
#   bash bench/larger_than_memory.sh MODEL.gguf LIMIT_MiB [N_TOKENS=16]
# Environment: SPECDEC=build/specdec, LLAMA_SERVER=cache/llama.cpp/<commit>/build/bin/llama-server,
#   T=2 threads, PROMPT='The history of the printing press', PORT=8097
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: larger_than_memory.sh MODEL.gguf LIMIT_MiB [N_TOKENS]}; limit=${2:?LIMIT_MiB}; n=${3:-16}
SPECDEC=${SPECDEC:-build/specdec} T=${T:-2} PORT=${PORT:-8097}
PROMPT=${PROMPT:-The history of the printing press}
LLAMA_SERVER=${LLAMA_SERVER:-$(ls -d cache/llama.cpp/*/build/bin/llama-server 2>/dev/null | head -1)}
[ -x "$SPECDEC" ] || { echo "larger_than_memory.sh: $SPECDEC not built" >&2; exit 1; }
[ -x "$LLAMA_SERVER" ] || { echo "larger_than_memory.sh: no llama-server (bash bench/vs-llamacpp/build_llamacpp.sh)" >&2; exit 1; }
[ -s "$model" ] || { echo "larger_than_memory.sh: no file $model" >&2; exit 1; }

# The caller's memory group, and a child of it with the limit.
if own=$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup) && [ -n "$own" ]; then
  grp=/sys/fs/cgroup/memory$own/sd-ltm-$$ limit_file=memory.limit_in_bytes peak_file=memory.max_usage_in_bytes
else
  own=$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
  grp=/sys/fs/cgroup$own/sd-ltm-$$ limit_file=memory.max peak_file=memory.peak
fi
mkdir "$grp" || { echo "larger_than_memory.sh: cannot make the memory group $grp (root needed)" >&2; exit 1; }
srv=""
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; wait 2>/dev/null || true; rmdir "$grp" 2>/dev/null || true; }
trap cleanup EXIT
echo $((limit << 20)) > "$grp/$limit_file"
drop() { /usr/bin/python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$model"; }
reset_peak() { [ "$peak_file" = memory.max_usage_in_bytes ] && echo 0 > "$grp/$peak_file" || true; }
peak_mib() { awk '{ printf "%.0f", $1 / 1048576 }' "$grp/$peak_file" 2>/dev/null || echo "?"; }
size_mib=$(( $(stat -c %s "$model") >> 20 ))
echo "# $(basename "$model"): $size_mib MiB file, limit $limit MiB, $n tokens, $T threads"

# specdec: the stats line has decode tok/s and the process's peak RSS.
drop; reset_peak
t0=$(date +%s.%N)
if line=$(bash -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' _ "$grp" \
     "$SPECDEC" generate -m "$model" -p "$PROMPT" -n "$n" -t "$T" -c 512 --spec none 2>&1 >/tmp/ltm-ours.$$ | tail -n 2); then
  ours_rc=0; else ours_rc=$?; fi
t1=$(date +%s.%N)
echo "specdec (exit $ours_rc, $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }') s wall):"
echo "$line" | sed 's/^/  /'
echo "  group peak $(peak_mib) MiB; text: $(head -c 120 /tmp/ltm-ours.$$ | tr '\n' ' ')"
rm -f /tmp/ltm-ours.$$

# llama.cpp: its server in the group, one /completion request; its timings
# give decode tok/s, /proc gives the process's peak RSS.
drop; reset_peak
t0=$(date +%s.%N)
bash -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' _ "$grp" \
  "$LLAMA_SERVER" -m "$model" -t "$T" -c 512 --port "$PORT" -np 1 >/tmp/ltm-llama.$$ 2>&1 &
srv=$!
until curl -sf "http://127.0.0.1:$PORT/health" >/dev/null; do
  kill -0 "$srv" 2>/dev/null || { echo "llama.cpp: llama-server exited while loading:"; tail -n 3 /tmp/ltm-llama.$$; srv=""; break; }
  sleep 1
done
if [ -n "$srv" ]; then
  body=$(/usr/bin/python3 -c 'import json, sys; print(json.dumps({"prompt": sys.argv[1], "n_predict": int(sys.argv[2]),
    "temperature": 0, "cache_prompt": False}))' "$PROMPT" "$n")
  out=$(curl -sf "http://127.0.0.1:$PORT/completion" -d "$body") && llama_rc=0 || llama_rc=$?
  t1=$(date +%s.%N)
  hwm=$(awk '/^VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$srv/status")
  echo "llama.cpp (exit $llama_rc, $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }') s wall, load included):"
  echo "$out" | /usr/bin/python3 -c 'import json, sys
d = json.load(sys.stdin); t = d["timings"]
print("  prefill %.2f tok/s (%d tokens) | decode %.2f tok/s (%d tokens)" % (t["prompt_per_second"], t["prompt_n"],
      t["predicted_per_second"], t["predicted_n"]))
print("  text: " + d["content"][:120].replace("\n", " "))' || echo "  no answer"
  echo "  process peak RSS $hwm MiB, group peak $(peak_mib) MiB"
  kill "$srv"; wait "$srv" 2>/dev/null || true; srv=""
fi
rm -f /tmp/ltm-llama.$$
