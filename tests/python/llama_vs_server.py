"""Sends each request llama_cpp_script.py made (its JSON lines) to a running
`specdec serve` and checks the server's answer equals what specdec.Llama
returned: text or message (content, reasoning, tool calls by name and
arguments), finish_reason, usage and log-probabilities; a stream assembled
(content, calls, concatenated log-probabilities) and its shape (first delta
role "assistant", the last chunk carrying finish_reason). The server gets
llama-cpp-python's defaults for the sampling fields the script left out, so
those defaults are checked too. Standard library only.

usage: python3 llama_vs_server.py BASE_URL RESULTS.jsonl
"""
import json
import sys
import urllib.request

# llama-cpp-python's documented defaults per route (create_completion / create_chat_completion).
DEFAULTS = {"completions": {"max_tokens": 16, "temperature": 0.8, "top_p": 0.95, "top_k": 40, "min_p": 0.05},
            "chat": {"temperature": 0.2, "top_p": 0.95, "top_k": 40, "min_p": 0.05}}


def post(base, route, body):
    req = urllib.request.Request(base + "/v1/" + ("chat/completions" if route == "chat" else "completions"),
                                 data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        raw = r.read().decode()
    if not body.get("stream"):
        return json.loads(raw)
    out = []
    for line in raw.split("\n"):
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[6:]))
    return out


def calls_of(calls):
    return [(c["function"]["name"], c["function"]["arguments"]) for c in calls or []]


def whole(route, r):
    """The comparable part of a non-streamed answer."""
    c = r["choices"][0]
    o = {"finish_reason": c["finish_reason"], "logprobs": c["logprobs"],
         "usage": {k: r["usage"][k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}}
    if route == "chat":
        m = c["message"]
        o.update(role=m["role"], content=m["content"], reasoning=m.get("reasoning_content"),
                 calls=calls_of(m.get("tool_calls")))
    else:
        o["text"] = c["text"]
    return o


def assemble(route, chunks, problems, who):
    """A stream as a client assembles it (usage and timings chunks skipped)."""
    chunks = [c for c in chunks if c.get("choices")]
    if not chunks:
        problems.append("%s: an empty stream" % who)
        return {}
    last = chunks[-1]["choices"][0]
    if last["finish_reason"] is None or any(c["choices"][0]["finish_reason"] for c in chunks[:-1]):
        problems.append("%s: finish_reason not on the last chunk only" % who)
    text, reasoning, calls, lps = "", "", [], None
    if route == "chat":
        first = chunks[0]["choices"][0]["delta"]
        if first.get("role") != "assistant":
            problems.append("%s: the first delta has no role assistant: %r" % (who, first))
        for ch in chunks:
            assert ch["object"] == "chat.completion.chunk", ch
            c = ch["choices"][0]
            d = c["delta"]
            text += d.get("content") or ""
            reasoning += d.get("reasoning_content") or ""
            for tc in d.get("tool_calls") or []:
                if tc["index"] == len(calls):
                    if not tc.get("id") or tc.get("type") != "function" or tc["function"].get("arguments") != "":
                        problems.append("%s: a call's first delta is not {id, type, name, arguments \"\"}" % who)
                    calls.append([tc["function"]["name"], ""])
                else:
                    calls[tc["index"]][1] += tc["function"]["arguments"]
            if c["logprobs"] is not None:
                lps = (lps or []) + c["logprobs"]["content"]
        return {"content": text, "reasoning": reasoning, "calls": [tuple(c) for c in calls],
                "finish_reason": last["finish_reason"], "logprobs": lps}
    for ch in chunks:
        assert ch["object"] == "text_completion", ch
        c = ch["choices"][0]
        text += c["text"]
        if c["logprobs"] is not None:
            lps = lps or {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
            for k in lps:
                lps[k] += c["logprobs"][k]
    return {"text": text, "finish_reason": last["finish_reason"], "logprobs": lps}


def main():
    base, path = sys.argv[1], sys.argv[2]
    problems, n = [], 0
    for line in open(path, encoding="utf-8"):
        rec = json.loads(line)
        route, name = rec["route"], rec["name"]
        body = dict(DEFAULTS[route])
        body.update(rec["request"])
        if "logit_bias" in body:
            body["logit_bias"] = {str(k): v for k, v in body["logit_bias"].items()}
        theirs = post(base, route, body)
        ours = rec["result"]
        if body.get("stream"):
            a, b = assemble(route, ours, problems, name + " (Llama)"), assemble(route, theirs, problems,
                                                                                 name + " (server)")
        else:
            for who, r in (("Llama", ours), ("server", theirs)):
                want = "chat.completion" if route == "chat" else "text_completion"
                if r.get("object") != want or not isinstance(r.get("created"), int) or not r.get("id"):
                    problems.append("%s (%s): not a %s object" % (name, who, want))
            a, b = whole(route, ours), whole(route, theirs)
        n += 1
        if a != b:
            diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
            problems.append("%s: Llama != server: %s" % (name, json.dumps(diff)[:1500]))
        else:
            print("ok   %-26s %s" % (name, json.dumps(a.get("text", a.get("content")))[:70]))
    for p in problems:
        print("FAIL " + p)
    print("%d requests compared, %d problems" % (n, len(problems)))
    return 1 if problems or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
