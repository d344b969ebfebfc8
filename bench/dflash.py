#!/usr/bin/python3
"""DFlash vs the other head drafter of a fixture pair, per prompt class; the block length the speedup
model picks against a sweep of fixed lengths.

  python3 bench/dflash.py --pair qwen3 [-n 96] [--reps 3] [-t 1] [--ks 1,2,3,4,5,6,7] [--json OUT]
  python3 bench/dflash.py --pair q35   ...

Pairs: qwen3 = models/fixture-target.gguf with models/fixture-dflash.gguf and the EAGLE-3 head
models/fixture-eagle3.gguf (K 3, its training depth); q35 = models/fixture-q35-target.gguf with
models/fixture-q35-dflash.gguf and the target's own MTP block (K 1..3 swept, the best kept).

Per prompt file of bench/prompts, `specdec generate --json` runs, drafters alternated inside each rep so
they share the machine's noise, medians of --reps:
  - plain decoding (greedy and seeded T 0.8), the base of every speedup, timed in the same rep;
  - each drafter at a fixed K (`--fixed-k --gate 0`: every round drafts K, so α is the drafter's);
  - DFlash at the K the speedup model picks (`--spec dflash`, gate on: gate.h block mode), and auto
    with the DFlash draft; their mean K = drafted / rounds, and the K the model would pick at the end.
Reported: α (accepted / drafted), accepted per round, the drafter's cost r per round in target steps
(the gate's measurement, for DFlash one block forward), c_v(K + 1) measured in the same run, tok/s
speedup over plain; and how much of the plain greedy output loops (share of generated tokens whose
preceding 8-gram occurred earlier in the output: a looping output is easy to draft and flatters α).
Speedups should be read from non-looping classes or the seeded T 0.8 columns.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
M = lambda f: os.path.join(ROOT, "models", f)  # noqa: E731
PAIRS = {
    "qwen3": dict(m=M("fixture-target.gguf"), dflash=M("fixture-dflash.gguf"), other="eagle3",
                  other_md=M("fixture-eagle3.gguf"), other_ks=[3]),
    "q35": dict(m=M("fixture-q35-target.gguf"), dflash=M("fixture-q35-dflash.gguf"), other="mtp",
                other_md=None, other_ks=[1, 2, 3]),
}


def run(a, prompt_file, spec, k, temp=0.0, seed=1):
    """k: an int (fixed K, gate off) or "pick" (the speedup model's K, gate on)."""
    p = PAIRS[a.pair]
    args = [a.specdec, "generate", "-m", p["m"], "-f", prompt_file, "-n", str(a.n), "-t", str(a.t), "--json",
            "--no-check", "--seed", str(seed)]
    if temp > 0:
        args += ["--temp", str(temp)]
    if spec == "none":
        args += ["--spec", "none"]
    else:
        md = p["dflash"] if spec in ("dflash", "auto") else p["other_md"]
        args += ["--spec", spec] + (["-md", md] if md else [])
        args += ["--draft-max", str(a.block - 1)] if k == "pick" else \
            ["--draft-max", str(k), "--fixed-k", "--gate", "0"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"{' '.join(args)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def loop_share(toks, n=8):
    seen, hits = set(), 0
    for i in range(n, len(toks)):
        g = tuple(toks[i - n:i])
        hits += g in seen
        seen.add(g)
    return hits / max(1, len(toks) - n)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pair", choices=sorted(PAIRS), default="qwen3")
    ap.add_argument("--specdec", default=os.path.join(ROOT, "build", "specdec"))
    ap.add_argument("-n", type=int, default=96)
    ap.add_argument("-t", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ks", default="1,2,3,4,5,6,7")
    ap.add_argument("--block", type=int, default=8)
    ap.add_argument("--classes", default="", help="comma-separated prompt names (default: all)")
    ap.add_argument("--json", help="also write every run's numbers here")
    a = ap.parse_args()
    p = PAIRS[a.pair]
    ks = [int(x) for x in a.ks.split(",")]
    configs = [(p["other"], k) for k in p["other_ks"]] + [("dflash", k) for k in ks] + \
              [("dflash", "pick"), ("auto", "pick")]
    files = sorted(glob.glob(os.path.join(ROOT, "bench", "prompts", "*.txt")))
    if a.classes:
        files = [f for f in files if os.path.basename(f)[:-4] in a.classes.split(",")]
    print(f"pair {a.pair}: {p['m']} / {p['dflash']} / {p['other']}; n {a.n}, -t {a.t}, reps {a.reps}")
    print("| class | drafter | K | loops | α | acc/round | tok/fwd | r | c_v(K+1) | speedup | α T0.8 | "
          "acc/round T0.8 | speedup T0.8 |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    dump = {}
    for pf in files:
        cls = os.path.basename(pf)[:-4]
        res = {c: {"g": [], "s": []} for c in configs}
        base = {"g": [], "s": []}
        loops = 0.0
        for rep in range(a.reps):
            for temp, key in ((0.0, "g"), (0.8, "s")):
                b = run(a, pf, "none", 0, temp, rep + 1)
                base[key].append(b["decode_tok_s"])
                if key == "g":
                    loops = loop_share(b["tokens"])
                for c in configs[rep % len(configs):] + configs[:rep % len(configs)]:  # rotated
                    res[c][key].append(run(a, pf, c[0], c[1], temp, rep + 1))
        dump[cls] = {"loops": loops, "base": base,
                     "runs": {f"{c[0]}:{c[1]}": {k: [{x: r[x] for x in r if x not in ("text", "tokens")}
                                                      for r in v] for k, v in res[c].items()} for c in configs}}
        for c in configs:
            g, s = res[c]["g"], res[c]["s"]
            sp_g = med([x["decode_tok_s"] for x in g]) / med(base["g"])
            sp_s = med([x["decode_tok_s"] for x in s]) / med(base["s"])
            rounds = sum(x["rounds"] for x in g)
            kmean = sum(x["drafted"] for x in g) / rounds if rounds else 0
            klabel = str(c[1]) if c[1] != "pick" else f"pick {kmean:.2f} (→{med([x['gate_k'] for x in g]):.0f})"
            kk = c[1] if c[1] != "pick" else max(1, round(kmean))
            cv = med([x["gate_cv"][kk] if kk < len(x["gate_cv"]) else None for x in g])  # gate_cv[i] = c_v(i+1)
            r = med([x["gate_r"] * (1 if c[0] in ("dflash", "auto") else kk) for x in g])  # per round
            f = lambda v: "–" if v is None or v != v else f"{v:.2f}"  # noqa: E731
            print(f"| {cls} | {c[0]} | {klabel} | {loops:.2f} | {f(med([x['acceptance'] for x in g]))} | "
                  f"{f(med([x['accepted_per_round'] for x in g]))} | {f(med([x['tokens_per_forward'] for x in g]))} | "
                  f"{f(r)} | {f(cv)} | {sp_g:.2f} | {f(med([x['acceptance'] for x in s]))} | "
                  f"{f(med([x['accepted_per_round'] for x in s]))} | {sp_s:.2f} |", flush=True)
    if a.json:
        json.dump(dump, open(a.json, "w"))


if __name__ == "__main__":
    main()
