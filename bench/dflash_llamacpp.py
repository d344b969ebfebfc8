#!/usr/bin/python3
"""llama.cpp runs our DFlash fixture drafts: its greedy speculative text against its own plain text.

  python3 bench/dflash_llamacpp.py --bin DIR -m models/fixture-q35-target.gguf -md models/fixture-q35-dflash.gguf
      [-n 64] [--n-max 7] [--port 18641]

Starts two `llama-server`s from DIR (llama.cpp's own build, bench/vs-llamacpp/build_llamacpp.sh): one plain,
one with `--spec-type draft-dflash -md DRAFT --spec-draft-n-max N`; sends every bench/prompts file to
both as /completion, temperature 0, n_predict n; prints per prompt whether the texts are equal (else the
first differing character), and the speculative server's drafted / accepted counts (its timings).
"""
import argparse
import glob
import json
import os
import subprocess
import time
import urllib.request

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def post(port, body, timeout=600):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def wait_up(port, proc, timeout=300):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server on port {port} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"llama-server on port {port} did not come up")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="llama.cpp's build/bin")
    ap.add_argument("-m", required=True)
    ap.add_argument("-md", required=True)
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("--n-max", type=int, default=7)
    ap.add_argument("--port", type=int, default=18641)
    ap.add_argument("-t", type=int, default=1)
    a = ap.parse_args()
    common = ["-m", a.m, "-t", str(a.t), "-c", "2048", "--parallel", "1", "--no-webui"]
    plain = subprocess.Popen([os.path.join(a.bin, "llama-server"), *common, "--port", str(a.port)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    spec = subprocess.Popen([os.path.join(a.bin, "llama-server"), *common, "--port", str(a.port + 1), "-md", a.md,
                             "--spec-type", "draft-dflash", "--spec-draft-n-max", str(a.n_max)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_up(a.port, plain)
        wait_up(a.port + 1, spec)
        same = drafted = accepted = 0
        files = sorted(glob.glob(os.path.join(ROOT, "bench", "prompts", "*.txt")))
        for pf in files:
            body = {"prompt": open(pf).read(), "n_predict": a.n, "temperature": 0, "cache_prompt": False}
            p, s = post(a.port, body), post(a.port + 1, body)
            tp, ts = p["content"], s["content"]
            eq = tp == ts
            diff = next((i for i in range(min(len(tp), len(ts))) if tp[i] != ts[i]), min(len(tp), len(ts)))
            tm = s.get("timings", {})
            dn, da = tm.get("draft_n", 0), tm.get("draft_n_accepted", 0)
            same += eq
            drafted += dn
            accepted += da
            print(f"{os.path.basename(pf)[:-4]}: {'equal' if eq else f'differs at char {diff}'} "
                  f"({len(tp)} chars), drafted {dn}, accepted {da}", flush=True)
        print(f"equal {same}/{len(files)}; accepted {accepted} of {drafted} drafts")
    finally:
        for pr in (plain, spec):
            pr.terminate()
            pr.wait()


if __name__ == "__main__":
    main()
