"""SIGTERM drain check against a running specdec serve (pid, base URL):
a streaming request A is generating and a request B waits in the queue when
the server gets SIGTERM; A streams on to its end ([DONE], finish_reason
"length") with chunks arriving after the signal, B is answered 200, and a
new connection made after the signal is refused."""
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import conversations as cv  # noqa: E402

pid, base = int(sys.argv[1]), sys.argv[2]
host, port = base.split("//")[1].split(":")
port = int(port)
N = cv.long_tokens(base, 3.0)


def post(body):
    return urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                  {"Content-Type": "application/json"})


first = threading.Event()
a = {"chunks_after": 0, "done": False, "finish": None, "tokens": 0}
t_sig = [None]


def stream_a():
    body = dict(cv.LONG, max_tokens=N, stream=True)
    with urllib.request.urlopen(post(body), timeout=300) as r:
        for line in r:
            line = line.decode().strip()
            if not line.startswith("data: "): continue
            first.set()
            if line == "data: [DONE]":
                a["done"] = True
                break
            o = json.loads(line[6:])
            assert "error" not in o, o
            if t_sig[0] is not None: a["chunks_after"] += 1
            for ch in o.get("choices", []):
                if ch.get("finish_reason"): a["finish"] = ch["finish_reason"]
            if o.get("usage"): a["tokens"] = o["usage"]["completion_tokens"]


b = {}


def request_b():
    body = {"messages": [{"role": "user", "content": "def add(a, b):"}], "max_tokens": 8, "temperature": 0}
    with urllib.request.urlopen(post(body), timeout=300) as r:
        b["status"] = r.status
        b["answer"] = json.load(r)["choices"][0]["message"]["content"]


ta = threading.Thread(target=stream_a)
ta.start()
assert first.wait(60), "request A never streamed"
tb = threading.Thread(target=request_b)
tb.start()
time.sleep(0.3)  # B is queued behind A
os.kill(pid, signal.SIGTERM)
t_sig[0] = time.time()
time.sleep(0.3)
s = socket.socket()
s.settimeout(5)
try:
    s.connect((host, port))
    s.sendall(b"GET /health HTTP/1.0\r\n\r\n")
    got = s.recv(100)
    raise AssertionError("a new connection after SIGTERM was served: %r" % got)
except (ConnectionRefusedError, ConnectionResetError):
    pass
finally:
    s.close()
refused_while_streaming = ta.is_alive()
ta.join(300)
tb.join(300)
assert a["done"] and a["finish"] == "length", "A did not finish cleanly: %r" % a
assert a["chunks_after"] > 0, "A had finished before the signal: nothing was in flight (%r)" % a
assert refused_while_streaming, "A had ended before the refused connection was tried"
assert b.get("status") == 200 and b.get("answer"), "queued B was not answered: %r" % b
print("ok  drain: A streamed %d of %d chunks after SIGTERM to [DONE]; queued B answered; new connection refused" %
      (a["chunks_after"], N))
