"""Limits on what a client controls, against a running `specdec serve`, for
tests/server/server_limits.test.sh. Standard library only.

usage: limits_client.py MODE BASE
  tokens   --max-prompt 64 --max-tokens 8: each refused (400, OpenAI body) and counted
  slow     --request-timeout 2: a one-byte-a-second sender is closed near the deadline
           (not kept alive by its trickle) and counted
  conns    --max-conns-per-ip 4 --max-conns 6: the 5th connection from one address and
           the 7th of all are refused at accept, and counted
  queue    --parallel 1 --queue 1: of requests sent together, those beyond the running one and
           the one waiting get 503 (OpenAI body, Retry-After), counted as rejected in /metrics
  late     a 400-token stream with timings_per_token (about 1 KB of events a token) read only
           after its generation has ended, in small reads: the same text as the whole answer
           (the server formats events only 32 KB ahead of the client, the rest as it reads)
  crowd    64 one-byte-a-second senders and a client that never reads its stream: a normal
           client's answer is the same and arrives while they are all still held; the
           non-reader's stream is cut (--write-timeout) and its generation cancelled
"""
import http.client
import json
import re
import socket
import sys
import threading
import time
import urllib.parse

GOOD = {"messages": [{"role": "user", "content": "def add(a, b):"}], "max_tokens": 16, "temperature": 0}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def addr(base):
    u = urllib.parse.urlsplit(base)
    return u.hostname, u.port


def request(base, method, path, body=None, timeout=120):
    c = http.client.HTTPConnection(*addr(base), timeout=timeout)
    data = json.dumps(body).encode() if body is not None else None
    c.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
    r = c.getresponse()
    out = (r.status, r.read())
    c.close()
    return out


def metric(base, reason):
    st, b = request(base, "GET", "/metrics")
    m = re.search(r'^specdec_refused_total\{reason="%s"\} (\d+)' % reason, b.decode(), re.M)
    if not m:
        fail("no refused_total for %s in /metrics" % reason)
    return int(m.group(1))


def outcome(base, name):
    st, b = request(base, "GET", "/metrics")
    m = re.search(r'^specdec_requests_total\{outcome="%s"\} (\d+)' % name, b.decode(), re.M)
    return int(m.group(1))


def answer(base):
    st, b = request(base, "POST", "/v1/chat/completions", GOOD)
    if st != 200:
        fail("the normal request: %d %r" % (st, b[:200]))
    return json.loads(b)["choices"][0]["message"]["content"]


def expect_400(base, body, param, code, reason):
    before = metric(base, reason)
    st, b = request(base, "POST", "/v1/chat/completions", body)
    if st != 400:
        fail("%s: status %d, want 400: %r" % (reason, st, b[:200]))
    e = json.loads(b)["error"]
    if e["param"] != param or e["code"] != code or e["type"] != "invalid_request_error":
        fail("%s: error %r" % (reason, e))
    if metric(base, reason) != before + 1:
        fail("%s: not counted in /metrics" % reason)
    print("ok  400 %s (param %s, code %s), counted" % (reason, param, code))


def tokens(base):
    long_msg = {"messages": [{"role": "user", "content": "word " * 200}], "max_tokens": 4, "temperature": 0}
    expect_400(base, long_msg, "messages", "prompt_too_long", "prompt_tokens")
    expect_400(base, dict(GOOD, max_tokens=9), "max_tokens", "max_tokens_too_large", "max_tokens")
    expect_400(base, dict(GOOD, max_completion_tokens=100), "max_completion_tokens", "max_tokens_too_large", "max_tokens")
    # Within the caps: answered; without max_tokens the cap applies.
    b = dict(GOOD)
    del b["max_tokens"]
    st, r = request(base, "POST", "/v1/chat/completions", b)
    usage = json.loads(r)["usage"]
    if st != 200 or usage["completion_tokens"] > 8:
        fail("no max_tokens: %d, %r (want at most 8 tokens)" % (st, usage))
    st, r = request(base, "POST", "/v1/chat/completions", dict(GOOD, max_tokens=8))
    if st != 200:
        fail("max_tokens 8 refused: %d" % st)
    print("ok  within the caps: answered; no max_tokens: %d tokens (cap 8)" % usage["completion_tokens"])


def closed(sock, wait):
    """True when the server closes sock within wait seconds (EOF or reset)."""
    sock.settimeout(wait)
    try:
        while True:
            d = sock.recv(4096)
            if not d:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


class Trickler(threading.Thread):
    """Sends a valid POST one byte a second; records when the server closed it."""

    def __init__(self, base, src="127.0.0.1"):
        super().__init__(daemon=True)
        body = json.dumps(GOOD)
        self.data = ("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     "Content-Length: %d\r\n\r\n%s" % (len(body), body)).encode()
        self.sock = socket.create_connection(addr(base), source_address=(src, 0))
        self.closed_at = None
        self.stop = False

    def run(self):
        t0 = time.monotonic()
        for i in range(len(self.data)):
            if self.stop:
                return
            try:
                self.sock.send(self.data[i:i + 1])
            except OSError:
                self.closed_at = time.monotonic() - t0
                return
            self.sock.settimeout(1.0)
            try:
                if self.sock.recv(4096) == b"":
                    self.closed_at = time.monotonic() - t0
                    return
            except socket.timeout:
                pass
            except OSError:
                self.closed_at = time.monotonic() - t0
                return


def slow(base):
    before = metric(base, "request_timeout")
    t = Trickler(base)
    t.start()
    t.join(20)
    if t.closed_at is None:
        fail("a one-byte-a-second sender was not closed within 20 s (--request-timeout 2)")
    if t.closed_at > 6:
        fail("the slow sender was closed after %.1f s, deadline 2 s" % t.closed_at)
    if metric(base, "request_timeout") != before + 1:
        fail("the request timeout was not counted")
    print("ok  a one-byte-a-second sender closed after %.1f s (--request-timeout 2), counted" % t.closed_at)
    # Headers that never end: the same deadline.
    s = socket.create_connection(addr(base))
    s.send(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    t0 = time.monotonic()
    for _ in range(10):
        try:
            s.send(b"a")
        except OSError:
            break
        if closed(s, 1.0):
            break
    took = time.monotonic() - t0
    if took > 6:
        fail("unfinished headers held the connection %.1f s" % took)
    print("ok  unfinished headers closed after %.1f s" % took)


def conns(base):
    ref = answer(base)
    held = []

    def open_from(src):
        s = socket.create_connection(addr(base), source_address=(src, 0))
        time.sleep(0.2)  # accepted (or refused) before the next
        return s
    ip0, all0 = metric(base, "connections_per_ip"), metric(base, "connections")
    for _ in range(4):
        held.append(open_from("127.0.0.1"))
    extra = open_from("127.0.0.1")
    if not closed(extra, 3):
        fail("a 5th connection from 127.0.0.1 was kept (--max-conns-per-ip 4)")
    for s in held:
        if closed(s, 0.05):
            fail("one of the first 4 connections was closed")
    if metric_via(base, "127.0.0.2", "connections_per_ip") != ip0 + 1:
        fail("the per-address refusal was not counted")
    # 127.0.0.2 has one connection now (the metrics request ended); 127.0.0.3 adds one: 6 open.
    held.append(open_from("127.0.0.2"))
    held.append(open_from("127.0.0.3"))
    extra = open_from("127.0.0.4")
    if not closed(extra, 3):
        fail("a 7th connection was kept (--max-conns 6)")
    for s in held:
        s.close()
    time.sleep(0.5)
    if metric(base, "connections") != all0 + 1:
        fail("the global refusal was not counted")
    if answer(base) != ref:
        fail("the answer after the refusals differs")
    print("ok  5th connection of an address and 7th of all refused at accept, both counted; answers unchanged")


def metric_via(base, src, reason):
    c = http.client.HTTPConnection(*addr(base), timeout=30, source_address=(src, 0))
    c.request("GET", "/metrics")
    b = c.getresponse().read().decode()
    c.close()
    return int(re.search(r'^specdec_refused_total\{reason="%s"\} (\d+)' % reason, b, re.M).group(1))


def non_reader(base):
    """A stream request on a socket with a tiny receive buffer that is never read."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(addr(base))
    body = json.dumps({"prompt": "def add(a, b):", "max_tokens": 3000, "temperature": 0, "stream": True,
                       "timings_per_token": True})
    s.send(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (len(body), body)).encode())
    return s


def crowd(base):
    t0 = time.monotonic()
    ref = answer(base)
    base_s = time.monotonic() - t0
    wt0, cancelled0 = metric(base, "write_timeout"), outcome(base, "cancelled")
    slow = [Trickler(base) for _ in range(64)]
    for t in slow:
        t.start()
    reader = non_reader(base)
    time.sleep(2)
    t0 = time.monotonic()
    got = answer(base)
    took = time.monotonic() - t0
    still = sum(1 for t in slow if t.closed_at is None)
    if got != ref:
        fail("the answer with 64 slow senders and a non-reader differs: %r vs %r" % (got, ref))
    if still != 64:
        fail("%d slow senders were closed before the normal answer: it had to wait for them" % (64 - still))
    # Not delayed, without a timed assert (the host's speed varies): the answer came while all
    # 64 slow senders were still held (each is cut only at --request-timeout, 30 s by default),
    # so it did not wait for any of them; the times are printed for the log.
    print("ok  normal answer unchanged with 64 slow senders still held and a non-reader"
          " (%.2f s; alone %.2f s)" % (took, base_s))
    # The non-reader: cut by --write-timeout, its generation cancelled (slot freed).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and metric(base, "write_timeout") == wt0:
        time.sleep(0.2)
    if metric(base, "write_timeout") != wt0 + 1:
        fail("the client that never reads was not cut (--write-timeout)")
    while time.monotonic() < deadline and outcome(base, "cancelled") == cancelled0:
        time.sleep(0.2)
    if outcome(base, "cancelled") != cancelled0 + 1:
        fail("the non-reader's generation was not cancelled")
    print("ok  the non-reader's stream cut by --write-timeout and its generation cancelled, counted")
    for t in slow:
        t.stop = True
    reader.close()
    if answer(base) != ref:
        fail("the answer afterwards differs")


def queue(base):
    """Bursts of 16 requests at once until one is refused (the first burst, unless the host
    answers each before the next arrives): every answer is a 200 or the queue's 503, and the
    503s are exactly what /metrics counts as rejected."""
    body = dict(GOOD, max_tokens=64)
    for burst in range(5):
        before = outcome(base, "rejected")
        got = []

        def one():
            c = http.client.HTTPConnection(*addr(base), timeout=300)
            c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
            r = c.getresponse()
            got.append((r.status, r.getheader("Retry-After"), r.read()))
            c.close()
        ts = [threading.Thread(target=one) for _ in range(16)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        refused = [g for g in got if g[0] == 503]
        if len(got) != 16 or any(g[0] not in (200, 503) for g in got):
            fail("a burst: statuses %r" % sorted(g[0] for g in got))
        for st, retry, b in refused:
            e = json.loads(b)["error"]
            if retry != "1" or e["type"] != "unavailable_error" or "--queue" not in e["message"]:
                fail("the queue's 503: Retry-After %r, error %r" % (retry, e))
        if outcome(base, "rejected") != before + len(refused):
            fail("%d refused by the queue, /metrics counted %d" % (len(refused), outcome(base, "rejected") - before))
        if refused:
            print("ok  burst of 16 with --queue 1: %d answered, %d refused with 503 (Retry-After), counted"
                  % (16 - len(refused), len(refused)))
            return
    fail("5 bursts of 16 requests and --queue 1 never refused one")


def late(base):
    body = {"prompt": "def add(a, b):", "max_tokens": 400, "temperature": 0, "timings_per_token": True}
    st, b = request(base, "POST", "/v1/completions", body)
    if st != 200:
        fail("the whole answer: %d" % st)
    whole = json.loads(b)["choices"][0]["text"]
    n = json.loads(b)["usage"]["completion_tokens"]
    s = socket.create_connection(addr(base), timeout=120)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    data = json.dumps(dict(body, stream=True)).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
              b"Content-Length: %d\r\n\r\n" % len(data) + data)
    # wait until the generation has ended (the server's requests_total counts it), reading nothing
    t_end = time.monotonic() + 120
    while time.monotonic() < t_end and outcome(base, "ok") < 2:
        time.sleep(0.2)
    raw = b""
    while True:
        d = s.recv(4096)
        if not d:
            break
        raw += d
    s.close()
    head, _, rest = raw.partition(b"\r\n\r\n")
    if b" 200 " not in head.split(b"\r\n")[0]:
        fail("the stream: %r" % head[:100])
    # chunked transfer: undo it, then the events
    out, i = b"", 0
    while True:
        j = rest.index(b"\r\n", i)
        size = int(rest[i:j], 16)
        if size == 0:
            break
        out += rest[j + 2:j + 2 + size]
        i = j + 2 + size + 2
    text, done = [], False
    for line in out.decode().split("\n"):
        if line == "data: [DONE]":
            done = True
        elif line.startswith("data: "):
            text += [c.get("text") or "" for c in json.loads(line[6:]).get("choices", [])]
    if not done or "".join(text) != whole:
        fail("the stream read late differs from the whole answer (done %s, %d vs %d chars)"
             % (done, len("".join(text)), len(whole)))
    print("ok  a %d-token stream (%d KB of events) read after its end: the whole answer, [DONE]" % (n, len(out) // 1024))


if __name__ == "__main__":
    {"tokens": tokens, "slow": slow, "conns": conns, "crowd": crowd, "queue": queue, "late": late}[sys.argv[1]](sys.argv[2])
