"""A stream read only after its whole answer was generated (server_memory.test.sh):
its text must equal the non-streamed answer's, and it must come in fewer events
than tokens (the backlog beyond 64 pieces was merged, src/server/job.c).
  slow_reader_client.py BASE"""
import http.client
import json
import re
import socket
import sys
import time
from urllib.parse import urlparse

base = urlparse(sys.argv[1])
N = 1500
req = dict(prompt="def add(a, b):", temperature=0, max_tokens=N, ignore_eos=True)


def metrics():
    c = http.client.HTTPConnection(base.hostname, base.port, timeout=60)
    c.request("GET", "/metrics")
    t = c.getresponse().read().decode()
    c.close()
    return t


c = http.client.HTTPConnection(base.hostname, base.port, timeout=300)
c.request("POST", "/v1/completions", json.dumps(req), {"Content-Type": "application/json"})
want = json.loads(c.getresponse().read())["choices"][0]["text"]
c.close()

s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect((base.hostname, base.port))
body = json.dumps(dict(req, stream=True, timings_per_token=True)).encode()
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\n\r\n" % len(body) + body)
# Read nothing until the answer is generated: the server is then far more than 64 pieces ahead.
t_end = time.time() + 300
time.sleep(0.2)
while time.time() < t_end and float(re.search(r"^specdec_requests_processing (\S+)", metrics(), re.M).group(1)) > 0:
    time.sleep(0.1)
s.settimeout(60)
data = b""
while True:
    d = s.recv(1 << 16)
    if not d: break
    data += d
    if b"data: [DONE]" in data: break
s.close()
text, events = [], 0
for line in data.decode().split("\n"):
    if not line.startswith("data: {"): continue
    o = json.loads(line[6:])
    for ch in o.get("choices", []):
        if ch.get("text"):
            text.append(ch["text"])
            events += 1
got = "".join(text)
print("tokens %d, events with text %d, text %s" % (N, events, "equal" if got == want else "DIFFERENT"))
ok = got == want and 0 < events < N
sys.exit(0 if ok else 1)
