"""A script written against llama-cpp-python's documented high-level API
(Llama, create_completion / __call__, create_chat_completion with tools,
response_format and streaming, LlamaGrammar, LlamaPromptLookupDecoding).

llama_api.test.sh runs it against specdec.Llama with only its import lines
changed (llama_cpp -> specdec), then sends every request it made to `specdec
serve` and compares the answers (tests/python/llama_vs_server.py). It prints
one JSON object per call: name, route, the request as the server takes it,
and what the call returned (stream chunks as a list).

usage: python3 llama_cpp_script.py MODEL.gguf N_TOKENS
"""
import json
import sys

from llama_cpp import Llama, LlamaGrammar
from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

model_path, n = sys.argv[1], int(sys.argv[2])
llm = Llama(model_path=model_path, n_ctx=1024, n_threads=1, seed=1234, verbose=False,
            draft_model=LlamaPromptLookupDecoding(num_pred_tokens=6))


def record(name, route, request, result):
    """Prints one call; request holds the fields the server gets for it."""
    if request.get("stream"):
        result = list(result)
    print(json.dumps({"name": name, "route": route, "request": request, "result": result}))
    sys.stdout.flush()
    return result


def completion(name, server_extra=None, **kw):
    out = llm.create_completion(**kw) if name.endswith("create") else llm(**kw)
    req = {k: v for k, v in kw.items() if k != "grammar"}
    req.update(server_extra or {})
    return record(name, "completions", req, out)


def chat(name, **kw):
    return record(name, "chat", dict(kw), llm.create_chat_completion(**kw))


code = 'def parse(path):\n    """Read the file at path and return its lines."""\n'
# Completions: greedy; seeded sampling with llama-cpp-python's defaults
# (temperature 0.8, top_k 40, top_p 0.95, min_p 0.05); log-probabilities,
# penalties and a logit bias; streamed; grammar-constrained.
completion("call greedy", prompt=code, max_tokens=n, temperature=0.0, stop=["\n\n\n"])
completion("create seeded", prompt=code, max_tokens=n, seed=7)
completion("create logprobs", prompt=code, max_tokens=n, temperature=0.0, logprobs=3, presence_penalty=0.5,
           frequency_penalty=0.3, repeat_penalty=1.2, logit_bias={12: -100.0, 13: 2.5})
completion("call stream", prompt=code, max_tokens=n, temperature=0.0, logprobs=2, stream=True)
completion("create stream seeded", prompt=code, max_tokens=n, temperature=0.9, top_k=0, top_p=0.9, min_p=0.0,
           seed=11, stream=True)
gbnf = 'root ::= "x = " [0-9]+ ("," [0-9]+)* "\\n"\n'
r = completion("create grammar", server_extra={"grammar": gbnf}, prompt=code, max_tokens=n, temperature=0.0,
               grammar=LlamaGrammar.from_string(gbnf))
assert r["choices"][0]["text"].startswith("x = "), r
point = {"type": "object", "properties": {"x": {"type": "integer"}, "label": {"type": "string", "maxLength": 8}},
         "required": ["x", "label"], "additionalProperties": False}
completion("call json schema", server_extra={"json_schema": point}, prompt=code, max_tokens=n, temperature=0.0,
           grammar=LlamaGrammar.from_json_schema(json.dumps(point)))

# Chat: the model's own template; greedy, seeded, log-probabilities, streamed.
conv = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Write a parser for CSV."}]
chat("chat greedy", messages=conv, max_tokens=n, temperature=0.0)
chat("chat seeded", messages=conv, max_tokens=n, seed=5)
chat("chat logprobs", messages=conv, max_tokens=n, temperature=0.0, logprobs=True, top_logprobs=2)
chat("chat stream", messages=conv, max_tokens=n, temperature=0.0, logprobs=True, top_logprobs=1, stream=True)
chat("chat stream seeded", messages=conv, max_tokens=n, temperature=0.7, seed=9, stream=True)

# JSON: llama-cpp-python's {"type": "json_object", "schema": S} and OpenAI's json_schema form.
r = chat("chat json_object schema", messages=conv, max_tokens=n, temperature=0.0,
         response_format={"type": "json_object", "schema": point})
content = r["choices"][0]["message"]["content"]
if r["choices"][0]["finish_reason"] == "stop":
    assert set(json.loads(content)) == {"x", "label"}, content
chat("chat json_schema stream", messages=conv, max_tokens=n, temperature=0.0, stream=True,
     response_format={"type": "json_schema", "json_schema": {"name": "point", "schema": point, "strict": True}})

# Tools: forced calls (the fixtures never call on their own), named and required,
# streamed and not; then the round trip: the call, the tool's result, an answer.
weather = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                            "days": {"type": "integer", "minimum": 1, "maximum": 14}},
           "required": ["city", "days"], "additionalProperties": False}
tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather forecast",
                                           "parameters": weather}},
         {"type": "function", "function": {"name": "add", "description": "Adds two numbers",
                                           "parameters": {"type": "object", "properties": {"a": {"type": "number"},
                                                                                           "b": {"type": "number"}},
                                                          "required": ["a", "b"]}}}]
ask = [{"role": "user", "content": "What is the weather in Paris for the next 3 days?"}]
named = {"type": "function", "function": {"name": "get_weather"}}
r = chat("tools named", messages=ask, tools=tools, tool_choice=named, max_tokens=160, temperature=0.0)
msg = r["choices"][0]["message"]
# Parallel calls are allowed: the fixture may start a second call and be cut off
# by max_tokens (finish_reason "length", the unfinished call left as content).
assert r["choices"][0]["finish_reason"] in ("tool_calls", "length"), r
assert msg["content"] is None or r["choices"][0]["finish_reason"] == "length", r
call = msg["tool_calls"][0]
assert call["function"]["name"] == "get_weather", call
args = json.loads(call["function"]["arguments"])
assert set(args) == {"city", "days"} and 1 <= args["days"] <= 14, args
chat("tools named stream", messages=ask, tools=tools, tool_choice=named, max_tokens=160, temperature=0.0,
     stream=True)
chat("tools required seeded", messages=ask, tools=tools, tool_choice="required", max_tokens=160, seed=3)
back = ask + [{"role": "assistant", "content": None, "tool_calls": [call]},
              {"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"forecast": "sunny", "high": 21})}]
chat("tools round trip", messages=back, tools=tools, tool_choice="none", max_tokens=n, temperature=0.0)

# tokenize / detokenize: bytes in, bytes out.
ids = llm.tokenize(code.encode("utf-8"), add_bos=False)
assert llm.detokenize(ids) == code.encode("utf-8")
