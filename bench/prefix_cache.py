#!/usr/bin/env python3
"""The prefix cache over many conversations, measured (a benchmark, not a test):
  bench/prefix_cache.py [--conv 4] [--turns 4] [--bin build/specdec] -- SERVE-OPTIONS...
Plays CONV conversations interleaved turn by turn (tests/server/conversations.py:
greedy and seeded sampling, 20-token answers) against a server with --cache-ram 0
(only the previous request's prefix is reused, which interleaving defeats) and
one with --cache-ram 2048, and prints per turn the median prompt tokens
prefilled, tokens reused (cache_n) and prefill time, and whether every answer
is the same on both."""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "server"))
import conversations as cv  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--conv", type=int, default=4)
ap.add_argument("--turns", type=int, default=4)
ap.add_argument("--bin", default="build/specdec")
ap.add_argument("serve", nargs="+")
a = ap.parse_args()


def run(cache):
    log = open("/tmp/specdec-pc-bench.%d.log" % os.getpid(), "w+")
    p = subprocess.Popen([a.bin, "serve", *a.serve, "--host", "127.0.0.1", "--port", "0", "--cache-ram", cache],
                         stderr=log)
    port = None
    for _ in range(3000):
        log.seek(0)
        m = re.search(r"listening on http://127.0.0.1:(\d+)", log.read())
        if m: port = int(m.group(1)); break
        if p.poll() is not None: sys.exit("server exited")
        time.sleep(0.1)
    try:
        return cv.play("http://127.0.0.1:%d" % port, a.conv, a.turns)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait()


off, on = run("0"), run("2048")
same = all(x["answer"] == y["answer"] for x, y in zip(off, on))
print("| turn | prompt tokens (median) | cache off: cache_n / prefilled / prefill ms | cache on: cache_n / prefilled / prefill ms |")
print("|---|---|---|---|")
for t in range(a.turns):
    f = [x for x in off if x["turn"] == t]
    n = [x for x in on if x["turn"] == t]
    med = lambda rs, k: statistics.median(r[k] for r in rs)
    print("| %d | %d | %d / %d / %.0f | %d / %d / %.0f |" % (
        t + 1, statistics.median(r["prompt_n"] + r["cache_n"] for r in f), med(f, "cache_n"), med(f, "prompt_n"), med(f, "prompt_ms"),
        med(n, "cache_n"), med(n, "prompt_n"), med(n, "prompt_ms")))
print("answers identical with and without the cache: %s" % ("yes" if same else "NO"))
