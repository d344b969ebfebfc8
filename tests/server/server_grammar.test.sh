#!/usr/bin/env bash
# Constrained output (response_format, grammar, json_schema) through the
# official openai npm client against `specdec serve` on the fixture models
# (tests/server/grammar_client.mjs says what is checked); --spec grammar;
# and the reasoning section the server puts before a request's grammar.
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

# The reasoning wrap (docs/GRAMMAR.md) needs </think> as one token, which no
# fixture vocabulary has: a random-weight model with the real Qwen tokenizer
# plus <think> and </think> as the user-defined tokens Qwen3's GGUFs have
# (sd-genmodel --add-token), served with the qwen35 template, whose generation
# prompt opens <think>. logit_bias steers it: " hello" at +100 stays in the
# reasoning (free: the answer's grammar would refuse it), and </think> at +100
# ends the section at once, the answer after it following the response_format
# or the forced tool call, the same with speculation off.
"${SD_BUILD_DIR:-build}/sd-genmodel" --shape tiny -o "$TMP/think.gguf" --add-token "<think>" --add-token "</think>" \
  2>/dev/null || { echo "sd-genmodel failed"; exit 1; }
start_server -m "$TMP/think.gguf" -t 1 --chat-template qwen35 --parallel 1
ids=$(curl -sf "$BASE/tokenize" -d '{"content":"</think> hello"}') || { echo "tokenize failed"; exit 1; }
read -r end hello < <(python3 -c 'import json,sys; t=json.loads(sys.argv[1])["tokens"]; assert len(t)==2, t; print(*t)' "$ids") ||
  { echo "</think> is not one token: $ids"; exit 1; }
yesno='{"type":"json_schema","json_schema":{"name":"r","schema":{"enum":["yes","no"]}}}'
tool='[{"type":"function","function":{"name":"yes","parameters":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}}}]'
call=",\"tools\":$tool,\"tool_choice\":\"required\",\"parallel_tool_calls\":false"
say() { curl -sf "$BASE/v1/chat/completions" -d "{\"messages\":[{\"role\":\"user\",\"content\":\"Yes or no?\"}],\"temperature\":0$1}"; }
free=",\"max_tokens\":6,\"logit_bias\":{\"$hello\":100}" closed=",\"logit_bias\":{\"$end\":100}"
reqs=(free "$free,\"response_format\":$yesno" rf ",\"max_tokens\":16,\"response_format\":$yesno$closed")
# Under the sanitizers (SD_ASAN: a 152k-token vocabulary's masks are slow there) those two only.
[ -n "${SD_ASAN:-}" ] || reqs+=(rf_off "${reqs[3]},\"speculative\":false" free_call "$free$call"
                                tc ",\"max_tokens\":60$call$closed" tc_off ",\"max_tokens\":60$call$closed,\"speculative\":false")
out=()
for ((i = 0; i < ${#reqs[@]}; i += 2)); do
  o=$(say "${reqs[i + 1]}") || { echo "request ${reqs[i]} failed"; tail -5 "$SERVER_LOG"; exit 1; }
  out+=("${reqs[i]}=$o")
done
python3 - "${out[@]}" <<'PY' || exit 1
import json, sys
r = {a.split("=", 1)[0]: json.loads(a.split("=", 1)[1])["choices"][0] for a in sys.argv[1:]}
for k in ("free", "free_call"):  # the section takes what the answer's grammar would refuse
    if k not in r: continue
    c, m = r[k], r[k]["message"]
    assert c["finish_reason"] == "length" and m.get("reasoning_content", "").split() == ["hello"] * 6, c
    assert not m.get("content") and not m.get("tool_calls"), c
rf, m = r["rf"], r["rf"]["message"]  # </think> first, then the answer's grammar
assert rf["finish_reason"] == "stop" and not m.get("reasoning_content") and json.loads(m["content"]) in ("yes", "no"), rf
assert r.get("rf_off", rf)["message"] == m, (rf, r.get("rf_off"))
if "tc" in r:  # the forced call's grammar has the same section
    tc, m = r["tc"], r["tc"]["message"]
    assert tc["finish_reason"] == "tool_calls" and not m.get("reasoning_content") and m["content"] is None, tc
    assert [c["function"]["name"] for c in m["tool_calls"]] == ["yes"], tc
    assert isinstance(json.loads(m["tool_calls"][0]["function"]["arguments"])["ok"], bool), tc
    off = r["tc_off"]["message"]["tool_calls"]
    assert [c["function"] for c in off] == [c["function"] for c in m["tool_calls"]], (tc, r["tc_off"])
print("reasoning wrap: a free section; after </think> %s%s" %
      (rf["message"]["content"], " and a call %s" % r["tc"]["message"]["tool_calls"][0]["function"] if "tc" in r else ""))
PY
stop_server "$SERVER_PID"
