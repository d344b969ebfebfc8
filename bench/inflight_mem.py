#!/usr/bin/env python3
"""What a request in flight holds in the server's heap (a benchmark run, not a ctest):
  bench/inflight_mem.py never   [--bin build/specdec] [-n 8]
      N clients send a 1500-token stream (timings_per_token) and never read it;
      glibc's live bytes (/metrics specdec_malloc_in_use_bytes, less the suffix
      memory's bytes) once every generation has ended, per client.
  bench/inflight_mem.py waiting [--bin build/specdec] [-n 8] [--zeros 20000]
      one slot busy with a long answer, then N non-streamed requests whose body
      carries an unknown field of ZEROS zeros (a body that parses to many JSON
      values); the live bytes while all N wait in the queue, less those with
      the long answer alone running, per waiting request.
The fixture pair, -t 1 -c 2048, --parallel 1, --cache-ram 0."""
import argparse
import http.client
import json
import re
import socket
import subprocess
import sys
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("mode", choices=["never", "waiting"])
ap.add_argument("--bin", default="build/specdec")
ap.add_argument("-n", type=int, default=8)
ap.add_argument("--zeros", type=int, default=20000)
a = ap.parse_args()

log = open("/tmp/specdec-inflight.%d.log" % id(a), "w+")
p = subprocess.Popen([a.bin, "serve", "-m", "models/fixture-target.gguf", "-md", "models/fixture-draft.gguf", "-t", "1",
                      "-c", "2048", "--queue", "64", "--max-body", "1048576", "--host", "127.0.0.1", "--port", "0",
                      "--write-timeout", "60", "--cache-ram", "0", "--parallel", "1"], stderr=log)
port = None
for _ in range(600):
    log.seek(0)
    m = re.search(r"listening on http://127.0.0.1:(\d+)", log.read())
    if m:
        port = int(m.group(1))
        break
    time.sleep(0.1)
if not port: sys.exit("server did not start")


def metrics():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/metrics")
    t = c.getresponse().read().decode()
    c.close()
    return t


def g(t, name):
    m = re.search(r"^%s (\S+)" % name, t, re.M)
    return float(m.group(1)) if m else 0.0


def live(t):
    return g(t, "specdec_malloc_in_use_bytes") - g(t, "specdec_suffix_cache_bytes")


def post(body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    st = c.getresponse().status
    c.close()
    return st


time.sleep(1)
if a.mode == "never":
    b0 = live(metrics())
    socks = []
    for _ in range(a.n):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", port))
        d = json.dumps(dict(prompt="def add(a, b):", temperature=0, stream=True, max_tokens=1500,
                            timings_per_token=True)).encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(d) + d)
        socks.append(s)
    time.sleep(0.5)
    while True:
        t = metrics()
        if g(t, "specdec_requests_processing") == 0 and g(t, "specdec_requests_deferred") == 0: break
        time.sleep(0.2)
    b1 = live(metrics())
    print("never-readers %d: live %.0f -> %.0f KB, %.0f KB each" % (a.n, b0 / 1024, b1 / 1024, (b1 - b0) / 1024 / a.n))
    for s in socks: s.close()
else:
    long = threading.Thread(target=post, args=(json.dumps(dict(prompt="def add(a, b):", temperature=0, max_tokens=1800,
                                                                ignore_eos=True)),))
    long.start()
    while g(metrics(), "specdec_requests_processing") == 0: time.sleep(0.05)
    b0 = live(metrics())
    body = json.dumps(dict(prompt="Hi", max_tokens=4, temperature=0, x=[0] * a.zeros))
    ths = [threading.Thread(target=post, args=(body,)) for _ in range(a.n)]
    for t in ths: t.start()
    peak = None
    while any(t.is_alive() for t in ths):
        t = metrics()
        if g(t, "specdec_requests_deferred") == a.n: peak = max(peak or 0, live(t))
        time.sleep(0.05)
    long.join()
    if peak is None: sys.exit("the requests never all waited at once")
    print("waiting requests %d (body %d bytes): live %.0f KB with the long answer alone, %.0f KB with all waiting, "
          "%.0f KB each" % (a.n, len(body), b0 / 1024, peak / 1024, (peak - b0) / 1024 / a.n))
p.terminate()
p.wait()
