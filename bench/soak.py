#!/usr/bin/env python3
"""Soak test of specdec serve (a benchmark run, not a ctest):
  bench/soak.py [--minutes 5] [--clients 16] [--bin build/specdec] [--cache-ram 64] [-- SERVE-OPTIONS...]
Starts a reference server without the prefix cache and records each prompt's
answer alone; then starts the soak server and runs CLIENTS threads for
MINUTES, each looping over a random mix:
  60% valid requests (chat, completion; streaming or not; greedy or seeded
      sampling; some second turns of a conversation): each must be answered
      (200) with exactly the reference answer (none mixed with another's);
  15% bad requests (malformed JSON, wrong types, out-of-range values,
      invalid UTF-8, an oversized body, an unknown route, a wrong method):
      each must get its 4xx;
  15% disconnects in the middle of a stream, 10% before the response.
With --hostile (the server gets --api-key, --write-timeout 3, --request-timeout 10;
valid requests carry the key): 50% valid, 10% bad, 10% requests of the hostile
corpus (tests/server/hostile.py, those under 64 KB: each must get its 4xx or a
clean close, injections their control-token check), 5% wrong or missing keys
(401), 15% disconnects, 5% slow readers (a stream read 64 bytes at a time every
0.3 s, then dropped), 5% clients that never read their stream (the server must
cut them: --write-timeout).
The server's RSS (VmRSS) is sampled every 2 s with the bytes of its two
bounded memories (/metrics, read just before and just after VmRSS; a sample
in which they changed is taken again): the prefix cache's states and the suffix memory;
after the warm-up (the first 20% of the run) the RSS less those bytes must
stay within 5% of its post-warm-up mean, and the cache within its
--cache-ram (both are live data, bounded and accounted for: how full they
are depends on which conversations came and how many answers have been
remembered; the raw RSS figures are printed too). Prints a
summary and writes it as JSON (--out). Exits 1 when a check fails.
Default serve options: the fixture pair, 1 thread, --queue 64, --max-body 65536."""
import argparse
import http.client
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--minutes", type=float, default=5)
ap.add_argument("--clients", type=int, default=16)
ap.add_argument("--bin", default="build/specdec")
ap.add_argument("--cache-ram", default="64")
ap.add_argument("--out", default="")
ap.add_argument("--hostile", action="store_true")
ap.add_argument("--mem-detail", action="store_true",
                help="also sample where the RSS is (heap, thread stacks, other anonymous maps), the thread count, "
                     "the prefix cache's bytes and malloc's live and free bytes (the JSON's \"mem\")")
ap.add_argument("serve", nargs="*")
a = ap.parse_args()
SERVE = a.serve or ["-m", "models/fixture-target.gguf", "-md", "models/fixture-draft.gguf", "-t", "1", "-c", "2048"]
SERVE = SERVE + ["--queue", "64", "--max-body", "65536", "--host", "127.0.0.1", "--port", "0"]
KEY = "sk-soak-61d2" if a.hostile else None
if a.hostile:
    SERVE += ["--api-key", KEY, "--write-timeout", "3", "--request-timeout", "10"]
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "server"))
    import hostile
AUTH = {"Authorization": "Bearer " + KEY} if KEY else {}

TOPICS = ["def add(a, b):", "Write a haiku about rain.", "List three colors.", "What is 2 + 2?",
          "Explain recursion briefly.", "import os\nfor f in", "Name a prime number.", "Say hello in French.",
          "class Stack:\n    def push(self, x):", "The capital of France is", "SELECT * FROM users WHERE",
          "Translate 'good morning' to Spanish."]


def valid_requests():
    """(key, path, body) of every valid request the clients send."""
    out = []
    for i, t in enumerate(TOPICS):
        samp = {"temperature": 0} if i % 2 == 0 else {"temperature": 0.8, "seed": 100 + i}
        out.append(("chat%d" % i, "/v1/chat/completions",
                    dict(messages=[{"role": "user", "content": t}], max_tokens=24, **samp)))
        out.append(("comp%d" % i, "/v1/completions", dict(prompt=t, max_tokens=16, **samp)))
    return out


def start(extra):
    log = open("/tmp/specdec-soak.%d.log" % os.getpid(), "w+")
    p = subprocess.Popen([a.bin, "serve", *SERVE, *extra], stderr=log)
    for _ in range(600):
        log.seek(0)
        m = re.search(r"listening on http://127.0.0.1:(\d+)", log.read())
        if m: return p, int(m.group(1))
        if p.poll() is not None: sys.exit("server exited at start")
        time.sleep(0.1)
    sys.exit("server did not start")


def post(port, path, body, stream=False, timeout=300):
    """Status and the answer text (streams assembled) of a request."""
    b = dict(body, stream=stream)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("POST", path, json.dumps(b), dict({"Content-Type": "application/json"}, **AUTH))
    r = c.getresponse()
    if r.status != 200:
        r.read()
        c.close()
        return r.status, None
    if not stream:
        o = json.loads(r.read())
        c.close()
        ch = o["choices"][0]
        return 200, ch["message"]["content"] if "message" in ch else ch["text"]
    text = []
    for line in r.read().decode().split("\n"):
        if not line.startswith("data: ") or line == "data: [DONE]": continue
        o = json.loads(line[6:])
        if "error" in o: return 599, None
        for ch in o.get("choices", []):
            text.append((ch.get("delta") or {}).get("content") or ch.get("text") or "")
    c.close()
    return 200, "".join(text)


def with_turn2(ref_port, reqs, ref):
    """Second turns of the chat conversations (the prefix cache's hits)."""
    more = []
    for key, path, body in reqs:
        if not key.startswith("chat"): continue
        msgs = body["messages"] + [{"role": "assistant", "content": ref[key]}, {"role": "user", "content": "More."}]
        more.append((key + "-t2", path, dict(body, messages=msgs)))
    for key, path, body in more:
        st, text = post(ref_port, path, body)
        assert st == 200, "reference %s: %d" % (key, st)
        ref[key] = text
    return reqs + more


BAD = [
    ("/v1/chat/completions", b'{"messages": [ {"role":', 400),
    ("/v1/chat/completions", b'{"messages": "hi"}', 400),
    ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}', 400),
    ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "x"}], "top_p": 7}', 400),
    ("/v1/completions", b'{"prompt": 5}', 400),
    ("/v1/completions", b'{"prompt": "\xff\xfe"}', 400),
    ("/v1/completions", b'{"prompt": "' + b"a" * 70000 + b'"}', 413),
    ("/v1/nothing", b'{}', 404),
]


def bad(port, rnd):
    path, body, want = rnd.choice(BAD)
    if rnd.random() < 0.15:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("GET", "/v1/chat/completions", headers=AUTH)
        st = c.getresponse().status
        c.close()
        return st == 405
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        c.request("POST", path, body, dict({"Content-Type": "application/json"}, **AUTH))
        st = c.getresponse().status
    except (ConnectionResetError, BrokenPipeError):
        st = 413  # the server may answer 413 and close before the whole body went out
    c.close()
    return st == want


def disconnect(port, rnd, body, mid_stream):
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    data = json.dumps(dict(body, stream=True, max_tokens=200)).encode()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + auth_line() +
              b"Content-Length: %d\r\n\r\n" % len(data) + data)
    if mid_stream:
        got = b""
        while got.count(b"data: ") < 2:
            chunk = s.recv(4096)
            if not chunk: break
            got += chunk
    s.close()


def auth_line():
    return b"Authorization: Bearer %s\r\n" % KEY.encode() if KEY else b""


def bad_key(port, rnd):
    """A wrong or missing key: 401 on an API route."""
    hdr = rnd.choice([{}, {"Authorization": "Bearer " + KEY + "x"}, {"Authorization": "Bearer"},
                      {"Authorization": KEY}, {"Authorization": "Basic " + KEY}])
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(rnd.choice(["GET", "POST"]), rnd.choice(["/v1/models", "/v1/chat/completions", "/props"]),
              b'{"messages":[{"role":"user","content":"x"}]}', hdr)
    st = c.getresponse().status
    c.close()
    return st == 401


def hostile_one(port, rnd, ctl, corpus):
    """One request of the hostile corpus: True when answered as the corpus says."""
    name, cls, payload = rnd.choice(corpus)
    base = "http://127.0.0.1:%d" % port
    if cls == "raw":
        st = hostile.send_raw(base, payload.replace(b"{KEY}", KEY.encode()))
        return st is None or 400 <= st < 500 or st == 505
    path, body = payload
    st, b = hostile.post(base, path, body, KEY)
    if cls == "refuse":
        e = json.loads(b)["error"] if b.startswith(b"{") else {}
        return 400 <= st < 500 or (st == 501 and e.get("param") in hostile.UNSUPPORTED)
    st2, b2 = hostile.post(base, path, json.dumps({"messages": hostile.harmless(json.loads(body)["messages"])}).encode(), KEY)
    got = sum(1 for t in json.loads(b)["tokens"] if t in ctl)
    return st == 200 and st2 == 200 and got == sum(1 for t in json.loads(b2)["tokens"] if t in ctl)


def server_end_open(port, client_port):
    """Whether the server's end of the connection from client_port is still ESTABLISHED
    (/proc/net/tcp: local address the server's port, remote the client's; state 01)."""
    want = ":%04X" % port, ":%04X" % client_port
    try:
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                x = line.split()
                if x[1].endswith(want[0]) and x[2].endswith(want[1]):
                    return x[3] == "01"
    except OSError:
        return True
    return False


def slow_reader(port, never):
    """A long completion stream (1500 tokens, about 2 MB of SSE) read 64 bytes every 0.3 s
    for 3 s, then dropped; or (never) not read at all: True when the server cut a
    never-reading client (its stream has no [DONE])."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    data = json.dumps(dict(prompt="def add(a, b):", temperature=0, stream=True, max_tokens=1500,
                           timings_per_token=True)).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + auth_line() +
              b"Content-Length: %d\r\n\r\n" % len(data) + data)
    if not never:
        for _ in range(10):
            time.sleep(0.3)
            if not s.recv(64): break
        s.close()
        return True
    # Read nothing until the server has closed its side (the job may wait in the queue
    # first), then look at what was sent. Its FIN waits behind the unsent answer, so this
    # end never sees it (CLOSE_WAIT) without reading: the server's end of the connection
    # is looked up in /proc/net/tcp instead (the same host), leaving ESTABLISHED when cut.
    t_end = time.time() + 300
    me = s.getsockname()[1]
    while time.time() < t_end and s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] != 8 \
            and server_end_open(port, me):
        time.sleep(0.5)
    s.settimeout(60)
    tail = b""
    try:
        while True:
            d = s.recv(1 << 16)
            if not d: break
            tail = (tail + d)[-64:]
    except (ConnectionResetError, socket.timeout):
        pass
    finally:
        s.close()
    return b"data: [DONE]" not in tail


def main():
    reqs = valid_requests()
    rp, rport = start(["--cache-ram", "0"])
    ref = {}
    for key, path, body in reqs:
        st, text = post(rport, path, body)
        assert st == 200, "reference %s: %d" % (key, st)
        ref[key] = text
    reqs = with_turn2(rport, reqs, ref)
    rp.send_signal(signal.SIGTERM)
    rp.wait()

    sp, port = start(["--cache-ram", a.cache_ram])
    t_end = time.time() + a.minutes * 60
    lock = threading.Lock()
    cnt = {"valid": 0, "valid_ok": 0, "mixed": 0, "failed": 0, "bad": 0, "bad_ok": 0, "disc_mid": 0, "disc_pre": 0}
    problems = []
    rss = []
    corpus, ctl = [], set()
    if a.hostile:
        corpus = [c for c in hostile.corpus() if (len(c[2]) if c[1] == "raw" else len(c[2][1])) < 65536]
        ctl = hostile.control_ids("http://127.0.0.1:%d" % port, KEY)
        cnt.update(hostile=0, hostile_ok=0, badkey=0, badkey_ok=0, slow=0, never=0, never_cut=0)

    def client(ci):
        rnd = random.Random(ci)
        while time.time() < t_end:
            x = rnd.random()
            key, path, body = rnd.choice(reqs)
            try:
                if a.hostile and x >= 0.50 and x < 0.75:
                    if x < 0.60: kind, ok = "bad", bad(port, rnd)
                    elif x < 0.70: kind, ok = "hostile", hostile_one(port, rnd, ctl, corpus)
                    else: kind, ok = "badkey", bad_key(port, rnd)
                    with lock:
                        cnt[kind] += 1
                        cnt[kind + "_ok"] += ok
                        if not ok: problems.append("%s request answered wrongly" % kind)
                    continue
                if a.hostile and x >= 0.90:
                    never = x >= 0.95
                    ok = slow_reader(port, never)
                    with lock:
                        cnt["never" if never else "slow"] += 1
                        if never: cnt["never_cut"] += ok
                    continue
                if x < (0.50 if a.hostile else 0.60):
                    st, text = post(port, path, body, stream=rnd.random() < 0.5)
                    with lock:
                        cnt["valid"] += 1
                        if st != 200: cnt["failed"] += 1; problems.append("%s: status %d" % (key, st))
                        elif text != ref[key]: cnt["mixed"] += 1; problems.append("%s: %r != %r" % (key, text, ref[key]))
                        else: cnt["valid_ok"] += 1
                elif x < 0.75:
                    ok = bad(port, rnd)
                    with lock:
                        cnt["bad"] += 1
                        cnt["bad_ok"] += ok
                else:
                    chat = next(r for r in reqs if r[0].startswith("chat"))[2]
                    mid = x < (0.83 if a.hostile else 0.90)
                    disconnect(port, rnd, chat, mid)
                    with lock: cnt["disc_mid" if mid else "disc_pre"] += 1
            except Exception as e:
                with lock:
                    cnt["failed"] += 1
                    problems.append("%s: %r" % (key, e))

    mem = []

    def sampler():
        t0 = time.time()
        while time.time() < t_end:
            # The caches' bytes are read just before and just after VmRSS: a prefix-cache state
            # stored or evicted in between (one is up to a few MB) would put the subtraction off
            # by that much, so such a sample is taken again (up to 5 tries; then the later read).
            # The suffix memory moves by a few kB an answer: not waited for.
            for _ in range(5):
                before = cache_kb(port)
                with open("/proc/%d/status" % sp.pid) as f:
                    st = f.read()
                after = cache_kb(port)
                if before[1] == after[1]: break
            kb = int(re.search(r"VmRSS:\s+(\d+)", st).group(1))
            rss.append((round(time.time() - t0, 1), kb, *after))
            if a.mem_detail:
                mem.append(mem_sample(sp.pid, st, port, round(time.time() - t0, 1)))
            time.sleep(2)

    ths = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)] + [threading.Thread(target=sampler)]
    for t in ths: t.start()
    for t in ths: t.join()
    alive = sp.poll() is None
    metrics = ""
    if alive:
        metrics = urllib_get(port, "/metrics")
        sp.send_signal(signal.SIGTERM)
        rc = sp.wait(120)
    else:
        rc = sp.returncode
    # The rule is on the RSS without the prefix cache's states and the suffix memory: both are
    # live data the server accounts for exactly (/metrics, sampled with each RSS sample) and
    # bounds (--cache-ram, checked below on the sum; --suffix-tokens); how full they are
    # depends on which conversations came and how many answers were remembered, not on a leak.
    # What is left (code, the model, slots, connections, the allocator's keep) must settle.
    warm_all = [(kb, ckb) for t, kb, ckb, _ in rss if t >= a.minutes * 60 * 0.2 and ckb >= 0]
    warm = [kb - ckb for kb, ckb in warm_all]
    mean = statistics.mean(warm) if warm else 0
    spread = max(abs(k - mean) / mean for k in warm) if warm else 1
    raw = [kb for kb, _ in warm_all]
    raw_mean = statistics.mean(raw) if raw else 0
    cap_kb = int(float(re.search(r"^specdec_prefix_cache_capacity_bytes (\S+)", metrics, re.M).group(1))) // 1024 \
        if "specdec_prefix_cache_capacity_bytes" in metrics else 0
    cache_max = max((pkb for t, _, _, pkb in rss if t >= a.minutes * 60 * 0.2), default=0)
    summary = dict(minutes=a.minutes, clients=a.clients, counts=cnt, rss_kb_first=rss[0][1] if rss else 0,
                   rss_kb_after_warmup_mean=round(raw_mean), rss_kb_after_warmup_min=min(raw, default=0),
                   rss_kb_after_warmup_max=max(raw, default=0),
                   rss_raw_max_dev_from_mean=round(max(abs(k - raw_mean) / raw_mean for k in raw), 4) if raw else 1,
                   caches_kb_after_warmup_min=min((c for _, c in warm_all), default=0),
                   caches_kb_after_warmup_max=max((c for _, c in warm_all), default=0),
                   prefix_cache_kb_after_warmup_max=cache_max,
                   cache_capacity_kb=cap_kb,
                   rss_minus_caches_kb_mean=round(mean), rss_minus_caches_kb_min=min(warm, default=0),
                   rss_minus_caches_kb_max=max(warm, default=0), rss_max_dev_from_mean=round(spread, 4),
                   rss_samples=len(rss), server_exit=rc, problems=problems[:20],
                   cache=dict(re.findall(r"^specdec_prefix_cache_(\w+) (\S+)$", metrics, re.M)),
                   suffix=dict(re.findall(r"^specdec_suffix_cache_(\w+) (\S+)$", metrics, re.M)))
    if a.hostile:
        summary["refused"] = dict(re.findall(r'^specdec_refused_total\{reason="(\w+)"\} (\d+)$', metrics, re.M))
    print(json.dumps(summary, indent=1))
    if a.out: json.dump(dict(summary, rss=rss, mem=mem), open(a.out, "w"), indent=1)
    ok = (alive and rc == 0 and cnt["valid"] == cnt["valid_ok"] and cnt["bad"] == cnt["bad_ok"] and spread <= 0.05
          and cnt["valid"] > 0 and cache_max <= cap_kb)
    if a.hostile:
        ok = ok and cnt["hostile"] == cnt["hostile_ok"] and cnt["badkey"] == cnt["badkey_ok"] and \
            cnt["never"] == cnt["never_cut"]
    print("soak: %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 1


def cache_kb(port):
    """The bytes of the server's two bounded memories in kB (/metrics): the prefix cache's
    states and the suffix memory (its gauge reads as a float), and the prefix cache's alone;
    -1 when /metrics did not answer."""
    try:
        m = urllib_get(port, "/metrics")
        pc = int(re.search(r"^specdec_prefix_cache_bytes (\d+)", m, re.M).group(1))
        sx = re.search(r"^specdec_suffix_cache_bytes (\S+)", m, re.M)
        return (pc + (int(float(sx.group(1))) if sx else 0)) // 1024, pc // 1024
    except Exception:
        return -1, -1


def mem_sample(pid, status, port, t):
    """Where the server's resident memory is: [heap], thread stacks (anonymous maps with a guard
    page just below them, as glibc makes them), other anonymous maps, file maps; kB."""
    out = dict(t=t, threads=int(re.search(r"Threads:\s+(\d+)", status).group(1)), heap=0, stacks=0, anon=0, file=0)
    prev_end, prev_guard = None, False
    try:
        with open("/proc/%d/smaps" % pid) as f:
            cur = None
            for line in f:
                m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ (\d+)\s*(.*)", line)
                if m:
                    lo, hi = int(m.group(1), 16), int(m.group(2), 16)
                    perms, inode, name = m.group(3), m.group(4), m.group(5)
                    guard = perms.startswith("---")
                    if name == "[heap]": cur = "heap"
                    elif inode != "0" or name.startswith("/"): cur = "file"
                    elif prev_guard and prev_end == lo and not guard: cur = "stacks"
                    else: cur = "anon"
                    prev_end, prev_guard = hi, guard
                elif line.startswith("Rss:") and cur:
                    out[cur] += int(line.split()[1])
    except OSError:
        pass
    try:  # glibc's own count (/metrics, where the server has mallinfo2): live bytes and free bytes it keeps
        m = urllib_get(port, "/metrics")
        for k in ("in_use", "mmapped", "free", "arena"):
            g = re.search(r"^specdec_malloc_%s_bytes (\S+)" % k, m, re.M)
            if g: out["malloc_" + k] = int(float(g.group(1))) // 1024
    except Exception:
        pass
    return out


def urllib_get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", path, headers=AUTH)
    t = c.getresponse().read().decode()
    c.close()
    return t


if __name__ == "__main__":
    sys.exit(main())
