#!/usr/bin/env python3
"""An agent loop through `specdec serve` with tools: speculation on and off.

A coding-agent conversation on /v1/chat/completions: a system prompt, a task,
three tools (read_file, grep, run). Each turn the model must call a tool
(tool_choice "required", so the call's arguments are grammar-constrained);
the tool answers from this repository (read_file: the file's first lines,
grep: matching lines, run: a fixed text); after TURNS calls a last turn
answers in prose (tool_choice "none"). Greedy, so every mode must produce the
same calls and answer (checked: the trace is LOSSLESS across modes).

For each --spec mode the server is started fresh (no suffix memory from an
earlier run), the whole trace is played, and the server's own timings are
summed over its requests: generated tokens, decode ms, target forwards.
tokens/forward = generated / (target forwards + 1 per request, the prefill's
row); tok/s = generated / decode time. Each mode runs --reps times, the mode
order rotating; the table holds medians.

usage: bench/agent_trace.py [--bin build/specdec] [-m MODEL.gguf] [-t 2]
       [--modes none,ngram,suffix,auto] [--reps 3] [--turns 4] [-n 96]
Standard library only.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = [
    {"type": "function", "function": {"name": "read_file", "description": "Read a file of the repository",
                                      "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                     "required": ["path"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "grep", "description": "Search the repository for a pattern",
                                      "parameters": {"type": "object",
                                                     "properties": {"pattern": {"type": "string"},
                                                                    "path": {"type": "string"}},
                                                     "required": ["pattern"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "run", "description": "Run a shell command in the repository",
                                      "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                                                     "required": ["command"], "additionalProperties": False}}},
]
SYSTEM = ("You are a coding agent working in the C repository specdec (a speculative decoding engine). "
          "Use the tools to look at the code before answering. Be brief.")
TASK = "Find where the n-gram drafter proposes its draft tokens, and tell me which function to read first."


def tool_result(name, args):
    """A deterministic answer from the repository's files."""
    try:
        if name == "read_file":
            path = os.path.normpath(os.path.join(ROOT, str(args.get("path", ""))))
            if not path.startswith(ROOT) or not os.path.isfile(path):
                return "error: no such file: %s" % args.get("path")
            with open(path, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[:40])
        if name == "grep":
            pat = str(args.get("pattern", ""))
            base = os.path.normpath(os.path.join(ROOT, str(args.get("path", "src"))))
            out = []
            for d, _, files in sorted(os.walk(base)) if base.startswith(ROOT) else []:
                for fn in sorted(files):
                    if not fn.endswith((".c", ".h")):
                        continue
                    p = os.path.join(d, fn)
                    for i, line in enumerate(open(p, encoding="utf-8", errors="replace")):
                        if pat and pat in line:
                            out.append("%s:%d:%s" % (os.path.relpath(p, ROOT), i + 1, line.rstrip()))
            return "\n".join(out[:20]) or "no matches"
        return "exit 0\n(output omitted)"
    except (OSError, re.error) as e:
        return "error: %s" % e


def post(base, body):
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=3600) as r:
        return json.load(r)


def play(base, turns, n):
    """One trace; returns (transcript, summed timings)."""
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    transcript, tot = [], {"gen": 0, "ms": 0.0, "fw": 0, "req": 0, "drafted": 0, "accepted": 0}
    for turn in range(turns + 1):
        last = turn == turns
        body = {"messages": msgs, "tools": TOOLS, "tool_choice": "none" if last else "required",
                "parallel_tool_calls": False, "temperature": 0, "max_tokens": n,
                "chat_template_kwargs": {"enable_thinking": False}}
        r = post(base, body)
        t = r["timings"]
        tot["gen"] += t["predicted_n"]
        tot["ms"] += t["predicted_ms"]
        tot["fw"] += t["target_forwards"] + 1
        tot["req"] += 1
        tot["drafted"] += t["draft_n"]
        tot["accepted"] += t["draft_n_accepted"]
        m = r["choices"][0]["message"]
        transcript.append({"content": m.get("content"), "calls": [(c["function"]["name"], c["function"]["arguments"])
                                                                  for c in m.get("tool_calls") or []]})
        if last or not m.get("tool_calls"):
            break
        msgs.append({"role": "assistant", "content": m.get("content"), "tool_calls": m["tool_calls"]})
        for c in m["tool_calls"]:
            try:
                args = json.loads(c["function"]["arguments"])
            except ValueError:
                args = {}
            msgs.append({"role": "tool", "tool_call_id": c["id"], "content": tool_result(c["function"]["name"], args)})
    return transcript, tot


def serve(args, mode):
    log = open(os.path.join(args.tmp, "serve-%s.log" % mode), "w+")
    cmd = [args.bin, "serve", "-m", args.model, "-t", str(args.threads), "-c", "8192", "--parallel", "1",
           "--spec", mode, "--host", "127.0.0.1", "--port", "0"]
    p = subprocess.Popen(cmd, stderr=log, stdout=subprocess.DEVNULL)
    for _ in range(1200):
        log.seek(0)
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", log.read())
        if m:
            return p, m.group(1)
        if p.poll() is not None:
            break
        time.sleep(0.1)
    p.kill()
    log.seek(0)
    sys.exit("server (%s) did not start: %s" % (" ".join(cmd), log.read()[-2000:]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "specdec"))
    ap.add_argument("-m", "--model", default=os.path.join(ROOT, "cache", "models", "grown-qwen3-0.6b-q8_0.gguf"))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--modes", default="none,ngram,suffix,auto")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("-n", type=int, default=96, help="max_tokens per request")
    ap.add_argument("--tmp", default="/tmp")
    ap.add_argument("--json", help="write the raw runs here")
    args = ap.parse_args()
    modes = args.modes.split(",")
    runs = {m: [] for m in modes}
    ref = None
    for rep in range(args.reps):
        order = modes[rep % len(modes):] + modes[:rep % len(modes)]
        for mode in order:
            p, base = serve(args, mode)
            try:
                transcript, tot = play(base, args.turns, args.n)
            finally:
                p.terminate()
                p.wait()
            tot["same"] = ref is None or transcript == ref
            ref = ref or transcript
            runs[mode].append(tot)
            print("rep %d %-8s %4d tokens in %d requests, %8.1f ms, %4d forwards, %s" % (
                rep + 1, mode, tot["gen"], tot["req"], tot["ms"], tot["fw"], "same" if tot["same"] else "DIFFERENT"),
                file=sys.stderr)
    if args.json:
        json.dump({"runs": runs, "transcript": ref}, open(args.json, "w"), indent=1)
    base_tps = statistics.median(r["gen"] / (r["ms"] / 1e3) for r in runs[modes[0]])
    print("| spec | requests | tokens | tokens/forward | accepted/drafted | tok/s (median of %d) | × %s | same output |"
          % (args.reps, modes[0]))
    print("|---|---|---|---|---|---|---|---|")
    for mode in modes:
        rs = runs[mode]
        tps = statistics.median(r["gen"] / (r["ms"] / 1e3) for r in rs)
        tpf = statistics.median(r["gen"] / r["fw"] for r in rs)
        print("| %s | %d | %d | %.2f | %d/%d | %.2f | %.2f | %s |" % (
            mode, rs[0]["req"], rs[0]["gen"], tpf, rs[0]["accepted"], rs[0]["drafted"], tps, tps / base_tps,
            "yes" if all(r["same"] for r in rs) else "NO"))
    return 0 if all(r["same"] for rs in runs.values() for r in rs) else 1


if __name__ == "__main__":
    sys.exit(main())
