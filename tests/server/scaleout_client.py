"""The scale-out scenario behind nginx (tests/server/server_scaleout.test.sh):
  scaleout_client.py BIN LB_PORT PORT0 PORT1 WORKDIR
nginx listens on LB_PORT and balances two replicas on PORT0 and PORT1, which
this script starts (and kills, restarts, stops) itself:
 1. 8 conversations, turns 1 and 2 through nginx with X-Conversation-Id:
    each stays on one replica, both replicas serve some, turn 2 reuses the
    replica's prefix cache (cache_n > 0), answers equal a cache-less server's;
    /replica/N/metrics reaches each replica's own counters.
 2. A stream in flight on replica 0 when it is killed (SIGKILL): its client
    gets an error, never a [DONE]; turn 3 of every conversation is then
    served by replica 1, answers unchanged.
 3. Replica 0 restarted; a stream on it when it gets SIGTERM finishes
    ([DONE]), a request for one of its conversations meanwhile is served by
    replica 1, and it exits 0."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import conversations as cv  # noqa: E402

BIN, LB, P0, P1, WORK = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
SERVE = ["-m", "models/fixture-target.gguf", "-md", "models/fixture-draft.gguf", "-t", "1", "-c", "4096",
         "--host", "127.0.0.1", "--drain-timeout", "60"]
LBB = "http://127.0.0.1:%d" % LB
procs = {}
N_CONV = 4 if os.environ.get("SD_ASAN") else 8  # under the sanitizers, fewer
KEY = []  # conversation i's X-Conversation-Id, chosen in main() so both replicas get some


def start(name, port, extra=()):
    log = open(os.path.join(WORK, "%s.%d.log" % (name, time.time_ns())), "w")
    p = subprocess.Popen([BIN, "serve", *SERVE, "--port", str(port), *extra], stderr=log)
    for _ in range(600):
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=1).read()
            procs[name] = p
            return p
        except OSError:
            assert p.poll() is None, "%s exited at start" % name
            time.sleep(0.1)
    raise AssertionError("%s did not start" % name)


def stop(name, sig=signal.SIGTERM):
    p = procs.pop(name)
    p.send_signal(sig)
    return p.wait(120)


def lines(r):
    """The body's lines, read with read1: a chunked body cut before its last
    chunk raises http.client.IncompleteRead (line iteration ends quietly)."""
    buf = b""
    while True:
        data = r.read1(65536)
        if not data:
            if buf: yield buf.decode()
            return
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield line.decode().strip()


def stream(conv, out, on_first=None):
    """A stream of about 3 s for conversation conv through nginx; out gets
    upstream, chunks, done, error."""
    body = dict(cv.LONG, max_tokens=cv.long_tokens(LBB, 3.0, "X-Conversation-Id"), stream=True)
    req = urllib.request.Request(LBB + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json", "X-Conversation-Id": KEY[conv]})
    out.update(chunks=0, done=False, error=None)
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            out["upstream"] = r.headers.get("X-Upstream")
            for line in lines(r):
                if not line.startswith("data: "): continue
                if line == "data: [DONE]":
                    out["done"] = True
                    break
                o = json.loads(line[6:])
                if "error" in o:
                    out["error"] = o["error"]
                    break
                out["chunks"] += 1
                if out["chunks"] == 1 and on_first: on_first()
    except Exception as e:  # the cut stream: an incomplete chunked body or a reset
        out["error"] = repr(e)


def main():
    # The reference: every conversation on one server without a prefix cache.
    start("cold", P0, ["--cache-ram", "0"])
    cold = cv.play("http://127.0.0.1:%d" % P0, N_CONV, 3)
    assert stop("cold") == 0
    ref = {(c["conv"], c["turn"]): c["answer"] for c in cold}

    start("r0", P0)
    start("r1", P1)
    a0, a1 = "127.0.0.1:%d" % P0, "127.0.0.1:%d" % P1
    # Where a key hashes depends on the replicas' (free, so random) ports: with
    # fixed keys, all N_CONV conversations land on one replica in about
    # 2 / 2^N_CONV of the runs. Probe keys with a cheap GET through nginx and
    # give half the conversations keys of each replica.
    by = {a0: [], a1: []}
    for n in range(256):
        req = urllib.request.Request(LBB + "/v1/models", headers={"X-Conversation-Id": "conv-%d" % n})
        with urllib.request.urlopen(req, timeout=30) as r:
            by.setdefault(r.headers.get("X-Upstream", "").split(", ")[-1], []).append("conv-%d" % n)
        if len(by[a0]) >= N_CONV and len(by[a1]) >= N_CONV: break
    assert len(by[a0]) >= N_CONV // 2 and len(by[a1]) >= N_CONV // 2, "key probe: %r" % by
    KEY[:] = [by[(a0, a1)[i % 2]][i // 2] for i in range(N_CONV)]
    convs = [[{"role": "user", "content": cv.TOPICS[i % len(cv.TOPICS)]}] for i in range(N_CONV)]
    home = {}

    def turn(t, expect_home=True):
        for i, c in enumerate(convs):
            o, up = cv.chat(LBB, c, i, "X-Conversation-Id", key=KEY[i])
            a = o["choices"][0]["message"]["content"]
            assert a == ref[(i, t)], "conv %d turn %d via %s: %r, want %r" % (i, t, up, a, ref[(i, t)])
            if t == 0: home[i] = up
            elif expect_home:
                assert up == home[i], "conv %d moved from %s to %s" % (i, home[i], up)
                assert o["timings"]["cache_n"] > 0, "conv %d turn %d: cache_n 0 on %s" % (i, t, up)
            yield i, up, o
            c.append({"role": "assistant", "content": a})
            c.append({"role": "user", "content": "Tell me more, part %d." % (t + 2)})

    for _ in turn(0): pass
    for _ in turn(1): pass
    ups = set(home.values())
    assert ups == {a0, a1}, "all conversations on %s" % ups
    hits = 0
    for n in (0, 1):
        m = urllib.request.urlopen(LBB + "/replica/%d/metrics" % n, timeout=10).read().decode()
        hits += int(next(l.split()[1] for l in m.splitlines() if l.startswith("specdec_prefix_cache_hits_total")))
    assert hits >= N_CONV, "prefix cache hits over both replicas: %d" % hits
    print("ok  affinity: %d conversations over 2 replicas, each kept its replica, turn 2 cache hits %d" % (N_CONV, hits))

    # 2. Kill replica 0 under an in-flight stream.
    k = next(i for i in range(N_CONV) if home[i] == a0)
    cut = {}
    th = threading.Thread(target=stream, args=(k, cut, lambda: procs["r0"].send_signal(signal.SIGKILL)))
    th.start()
    th.join(300)
    procs.pop("r0").wait(30)
    assert cut.get("upstream") == a0, "the stream went to %s" % cut.get("upstream")
    assert cut["error"] and not cut["done"], "the cut stream did not end in an error: %r" % cut
    for i, up, o in turn(2, expect_home=False):
        assert up == a1, "conv %d turn 3 served by %s after replica 0 died" % (i, up)
    print("ok  kill: the in-flight stream ended in an error (%s) after %d chunks; every conversation's turn 3 "
          "answered by the other replica, answers unchanged" % (str(cut["error"])[:60], cut["chunks"]))

    # 3. Replica 0 back, then SIGTERM under a stream: it drains.
    start("r0", P0)
    time.sleep(2.5)  # the rendered config's fail_timeout=2s: nginx tries replica 0 again
    for _ in range(40):
        o, up = cv.chat(LBB, [{"role": "user", "content": "hi"}], k, "X-Conversation-Id", key=KEY[k])
        if up == a0: break
        time.sleep(0.5)
    assert up == a0, "conversation %d never went back to replica 0" % k
    drained, side = {}, {}
    p0 = procs["r0"]

    def on_first():
        p0.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        # the same conversation key as the stream: it hashes to the draining replica
        o, up = cv.chat(LBB, [{"role": "user", "content": "hi"}], k, "X-Conversation-Id", key=KEY[k])
        side.update(up=up, answer=o["choices"][0]["message"]["content"])

    th = threading.Thread(target=stream, args=(k, drained, on_first))
    th.start()
    th.join(300)
    procs.pop("r0")
    rc = p0.wait(60)
    assert drained.get("upstream") == a0 and drained["done"] and not drained["error"], "drain: %r" % drained
    assert side.get("up") == a1 and side.get("answer"), "a request during the drain: %r" % side
    assert rc == 0, "replica 0 exited %d after SIGTERM" % rc
    print("ok  SIGTERM: replica 0 finished its stream (%d chunks, [DONE]) and exited 0; a request meanwhile went "
          "to replica 1" % drained["chunks"])
    assert stop("r1") == 0


try:
    main()
finally:
    for p in procs.values():
        p.kill()
        p.wait()
