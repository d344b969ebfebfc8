#!/usr/bin/env bash
# Constrained output (response_format, grammar, json_schema) through the
# official openai npm client against `specdec serve` on the fixture models
# (tests/server/grammar_client.mjs says what is checked).
source "$(dirname "$0")/lib.sh"
need_node_modules
start_server -m models/fixture-target.gguf -md models/fixture-draft.gguf -t 1
node tests/server/grammar_client.mjs "$BASE" || { echo "--- server log"; tail -20 "$SERVER_LOG"; exit 1; }
stop_server "$SERVER_PID"

# --spec grammar takes each request's own grammar (response_format, tools):
# the server starts without one, drafts the text that grammar forces (the
# same answer as without speculation), and decodes a request without a
# grammar plainly.
start_server -m models/fixture-target.gguf -t 1 --spec grammar --parallel 1
schema='{"type":"json_schema","json_schema":{"name":"r","schema":{"type":"object","properties":{"name":{"type":"string","maxLength":8},"count":{"type":"integer"}},"required":["name","count"],"additionalProperties":false}}}'
tools='[{"type":"function","function":{"name":"add","parameters":{"type":"object","properties":{"a":{"type":"number"},"ok":{"type":"boolean"}},"required":["a","ok"],"additionalProperties":false}}}]'
ask() { curl -sf "$BASE/v1/chat/completions" -d "{\"messages\":[{\"role\":\"user\",\"content\":\"Add one.\"}],\"temperature\":0,\"max_tokens\":48$1}"; }
for extra in ",\"response_format\":$schema" ",\"tools\":$tools,\"tool_choice\":\"required\",\"parallel_tool_calls\":false"; do
  on=$(ask "$extra") && off=$(ask "$extra,\"speculative\":false") || { echo "request failed"; tail -5 "$SERVER_LOG"; exit 1; }
  python3 - "$on" "$off" <<'PY' || exit 1
import json, sys
on, off = (json.loads(a) for a in sys.argv[1:3])
m, t = on["choices"][0]["message"], on["timings"]
assert t["spec_mode"] == "grammar" and t["draft_n"] > 0, t
assert (m.get("content"), m.get("tool_calls") and [c["function"] for c in m["tool_calls"]]) == \
       (off["choices"][0]["message"].get("content"),
        off["choices"][0]["message"].get("tool_calls") and [c["function"] for c in off["choices"][0]["message"]["tool_calls"]]), (on, off)
print("--spec grammar: drafted %d, accepted %d, %d tokens in %d target forwards" %
      (t["draft_n"], t["draft_n_accepted"], t["predicted_n"], t["target_forwards"]))
PY
done
plain=$(ask "") || { echo "request without a grammar failed"; exit 1; }
python3 -c 'import json,sys; t=json.loads(sys.argv[1])["timings"]; assert t["spec_mode"]=="none" and t["draft_n"]==0 and t["speculative"] is False, t' "$plain" || exit 1
stop_server "$SERVER_PID"
