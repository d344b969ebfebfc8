#!/usr/bin/env bash
# The llama-cpp-python door (specdec.Llama): tests/python/llama_cpp_script.py,
# a script written against llama-cpp-python's documented API (completion,
# chat, tools, JSON schema, grammar, log-probabilities, streaming), runs with
# only its import lines changed (llama_cpp -> specdec) on the fixture model;
# then every request it made goes to `specdec serve` on the same model and
# the answers must equal what Llama returned (tests/python/llama_vs_server.py:
# text, messages, tool calls, finish_reason, usage, log-probabilities,
# streams assembled), greedy and with seeded sampling. Then the keywords we do
# not implement raise, naming themselves.
source "$(dirname "$0")/../server/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "SKIPPED: python3 not found (missing package python3)"; exit 77; }
build=${SD_BUILD_DIR:-build}
lib=$build/libspecdec.so
[ -e "$lib" ] || { echo "FAIL: no $lib (the specdec_shared target)"; exit 1; }
export SPECDEC_LIB=$lib PYTHONPATH=python
# A sanitizer build's library needs its runtimes loaded first in python.
asan=$(ldd "$lib" | awk '/libasan|libubsan/ {print $3}' | tr '\n' ':')
n=24
if [ -n "$asan" ]; then
  export LD_PRELOAD=${asan%:} ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
  n=12
fi
T=models/fixture-target.gguf

# Only the import lines differ from the llama-cpp-python script.
sed 's/^from llama_cpp/from specdec/' tests/python/llama_cpp_script.py >"$TMP/script.py"
[ "$(diff tests/python/llama_cpp_script.py "$TMP/script.py" | grep -c '^>')" = 2 ] ||
  { echo "FAIL: expected exactly the two import lines to change"; exit 1; }
"$PY" "$TMP/script.py" "$T" "$n" >"$TMP/out.jsonl" || { echo "FAIL: the script failed against specdec.Llama"; exit 1; }

# The server's answers to the same requests (its speculation: auto; Llama's: the n-gram drafter).
start_server -m "$T" -t 1 -c 1024 --parallel 1
(unset LD_PRELOAD; "$PY" tests/python/llama_vs_server.py "$BASE" "$TMP/out.jsonl") ||
  { echo "--- server log"; tail -20 "$SERVER_LOG"; exit 1; }
stop_server "$SERVER_PID"

# chat_format="qwen35" (the built-in Qwen3.5 formatter: XML tool calls, a
# reasoning section opened by the prompt) against serve --chat-template
# qwen35: a forced call, thinking on, JSON with thinking on. Not under the
# sanitizers (time; the script above covers the same code paths there).
if [ -z "$asan" ]; then
  start_server -m "$T" -t 1 -c 1024 --parallel 1 --chat-template qwen35
  "$PY" - "$T" "$BASE" <<'EOF' || { echo "--- server log"; tail -20 "$SERVER_LOG"; exit 1; }
import json, sys, urllib.request
from specdec import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=1024, n_threads=1, chat_format="qwen35")
def post(body):
    req = urllib.request.Request(sys.argv[2] + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=600))
weather = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                            "days": {"type": "integer", "minimum": 1, "maximum": 14}},
           "required": ["city", "days"], "additionalProperties": False}
tools = [{"type": "function", "function": {"name": "get_weather", "parameters": weather}}]
bad = 0
for kw in (dict(tools=tools, tool_choice="required", chat_template_kwargs={"enable_thinking": False}),
           dict(chat_template_kwargs={"enable_thinking": True}),
           dict(response_format={"type": "json_object"}, chat_template_kwargs={"enable_thinking": True})):
    kw.update(messages=[{"role": "user", "content": "Weather in Paris?"}], max_tokens=64, temperature=0,
              top_k=40, top_p=0.95, min_p=0.05)
    a, b = llm.create_chat_completion(**kw)["choices"][0], post(kw)["choices"][0]
    for c in a["message"].get("tool_calls", []) + b["message"].get("tool_calls", []):
        c.pop("id")
    if (a["message"], a["finish_reason"]) != (b["message"], b["finish_reason"]):
        print("FAIL: qwen35 %s: Llama %s != server %s" % (sorted(kw), a, b))
        bad += 1
    if "tools" in kw and not a["message"].get("tool_calls"):
        print("FAIL: qwen35: the forced call was not parsed: %s" % a)
        bad += 1
sys.exit(bad)
EOF
  stop_server "$SERVER_PID"
fi

# Our speculation keywords: a draft model file (spec "auto" by default) and
# spec="none" give the same completions and chats; the draft model drafted.
"$PY" - "$T" models/fixture-draft.gguf "$n" <<'EOF' || exit 1
import sys
from specdec import Llama
t, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
spec = Llama(model_path=t, draft_model_path=d, n_ctx=512, n_threads=1, seed=3)
plain = Llama(model_path=t, n_ctx=512, n_threads=1, seed=3, spec="none")
msgs = [{"role": "user", "content": "List three prime numbers."}]
for kw in ({"temperature": 0.0}, {"temperature": 0.8}):
    a, b = spec("def main():", max_tokens=2 * n, **kw), plain("def main():", max_tokens=2 * n, **kw)
    assert a["choices"][0]["text"] == b["choices"][0]["text"], (kw, a, b)
    assert "draft" in spec.last_stats.drafter and spec.last_stats.n_drafted > 0, spec.last_stats
    assert plain.last_stats.n_drafted == 0, plain.last_stats
    a = spec.create_chat_completion(msgs, max_tokens=n, **kw)
    b = plain.create_chat_completion(msgs, max_tokens=n, **kw)
    assert a["choices"][0]["message"] == b["choices"][0]["message"], (kw, a, b)
EOF

# docs/PYTHON.md's Llama example, as it stands, runs.
awk '/^## llama-cpp/ {f = 1} f && /^```python/ {c = 1; next} c && /^```/ {exit} c' docs/PYTHON.md >"$TMP/example.py"
[ "$(wc -l <"$TMP/example.py")" -ge 4 ] || { echo "FAIL: no Llama example in docs/PYTHON.md"; exit 1; }
"$PY" "$TMP/example.py" >"$TMP/example.out" 2>&1 || { echo "FAIL: docs/PYTHON.md's Llama example: $(cat "$TMP/example.out")"; exit 1; }

# Unsupported keywords: a clear error naming the keyword, never ignored.
"$PY" - "$T" <<'EOF' || exit 1
import sys
from specdec import Llama, SpecdecError
llm = Llama(model_path=sys.argv[1], n_ctx=256, n_threads=1, n_gpu_layers=99, verbose=False, use_mlock=True)
cases = [
    (lambda: llm("x", mirostat_mode=2), "mirostat_mode"),
    (lambda: llm("x", typical_p=0.5), "typical_p"),
    (lambda: llm("x", tfs_z=0.9), "tfs_z"),
    (lambda: llm("x", echo=True), "echo"),
    (lambda: llm("x", suffix="y"), "suffix"),
    (lambda: llm("x", logits_processor=[lambda ids, s: s]), "logits_processor"),
    (lambda: llm.create_chat_completion([{"role": "user", "content": "x"}], functions=[{"name": "f"}]), "functions"),
    (lambda: llm.create_chat_completion([{"role": "user", "content": "x"}], tools=[
        {"type": "function", "function": {"name": "f"}}], tool_choice={"type": "function",
                                                                        "function": {"name": "g"}}), "'g'"),
    (lambda: llm.create_chat_completion([{"role": "user", "content": "x"}], response_format={"type": "xml"}),
     "response_format"),
    (lambda: llm("x", temperature=-1), "temperature"),
    (lambda: llm.create_embedding("x"), "create_embedding"),
    (lambda: Llama(model_path=sys.argv[1], lora_path="a.gguf"), "lora_path"),
    (lambda: Llama(model_path=sys.argv[1], rope_freq_base=5e5), "rope_freq_base"),
    (lambda: Llama(model_path=sys.argv[1], chat_format="alpaca"), "chat_format"),
    (lambda: Llama(model_path=sys.argv[1], no_such_keyword=1), "no_such_keyword"),
    (lambda: Llama(model_path="models/missing.gguf"), "models/missing.gguf"),
]
bad = 0
for fn, word in cases:
    try:
        fn()
        print("FAIL: no error for", word)
        bad += 1
    except (ValueError, TypeError, SpecdecError) as e:
        if word not in str(e):
            print("FAIL: the error for %s does not name it: %s" % (word, e))
            bad += 1
sys.exit(bad)
EOF
echo "llama_api.test.sh: all checks passed"
