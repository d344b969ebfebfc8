"""Interleaved multi-turn conversations against specdec serve, shared by the
prefix-cache and scale-out tests. Run as a script:
  conversations.py BASE N_CONV N_TURNS OUT.json [HEADER]
plays N_CONV conversations turn by turn, interleaved (turn 1 of each, then
turn 2 of each, ...), greedy and seeded sampling alternating by conversation,
and writes every answer with its timings; HEADER "X-Conversation-Id" sends
each conversation's id in that header."""
import json
import os
import sys
import urllib.request

# Under the sanitizers (SD_ASAN, ~100x slower) shorter answers keep the tests short.
MAX_TOKENS = 8 if os.environ.get("SD_ASAN") else 20

TOPICS = ["def add(a, b):", "Write a haiku about rain.", "List three colors.", "What is 2 + 2?",
          "Explain recursion briefly.", "import os\nfor f in", "Name a prime number.", "Say hello in French."]


def chat(base, msgs, conv, header=None, timeout=120, key=None):
    body = {"messages": msgs, "max_tokens": MAX_TOKENS}
    if conv % 2: body.update(temperature=0.8, seed=1000 + conv)
    else: body["temperature"] = 0
    h = {"Content-Type": "application/json"}
    if header: h[header] = key if key is not None else "conv-%d" % conv
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(), h)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        # nginx's $upstream_addr lists every replica tried ("a, b"): the last one answered
        return json.load(r), r.headers.get("X-Upstream", "").split(", ")[-1]


# A long stream that ends by length, not by an end token: this prompt and
# seed run past 3000 tokens on the dense fixture.
LONG = {"messages": [{"role": "user", "content": "Count: 1 2 3 4"}], "temperature": 0.8, "seed": 7,
        "speculative": False}


def long_tokens(base, seconds, header=None):
    """How many tokens of LONG take about `seconds` on this server now (the
    tests need a stream in flight for a while on a release build and under
    the sanitizers alike), in [48, 3000]."""
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(dict(LONG, max_tokens=64)).encode(),
                                 {"Content-Type": "application/json", **({header: "calibrate"} if header else {})})
    with urllib.request.urlopen(req, timeout=600) as r:
        pps = json.load(r)["timings"]["predicted_per_second"]
    return max(48, min(3000, int(pps * seconds)))


def play(base, n_conv, n_turns, header=None):
    convs = [[{"role": "user", "content": TOPICS[i % len(TOPICS)] + (" (%d)" % i if i >= len(TOPICS) else "")}]
             for i in range(n_conv)]
    out = []
    for turn in range(n_turns):
        for i, c in enumerate(convs):
            o, up = chat(base, c, i, header)
            a = o["choices"][0]["message"]["content"]
            out.append({"conv": i, "turn": turn, "answer": a, "cache_n": o["timings"]["cache_n"],
                        "prompt_n": o["timings"]["prompt_n"], "prompt_ms": o["timings"]["prompt_ms"],
                        "upstream": up})
            c.append({"role": "assistant", "content": a})
            c.append({"role": "user", "content": "Tell me more, part %d." % (turn + 2)})
    return out


if __name__ == "__main__":
    res = play(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[5] if len(sys.argv) > 5 else None)
    json.dump(res, open(sys.argv[4], "w"), indent=1)
