#!/usr/bin/python3
"""DFlash vs EAGLE-3 (vs MTP where the target has a block) on one fixture pair, per prompt class.

  python3 bench/dflash.py [-m models/fixture-target.gguf] [--dflash models/fixture-dflash.gguf]
                          [--eagle3 models/fixture-eagle3.gguf] [-n 128] [--reps 3] [-t 1]

Per prompt file of bench/prompts and drafter: `specdec generate --json` runs (medians of --reps,
drafters alternated inside each rep so they share the machine's noise), greedy with a fixed K
(--fixed-k, --gate 0: every round drafts, so alpha is the drafter's, not the gate's), and seeded
temperature 0.8 (seeds 1..reps). Reports alpha, accepted per round, tokens per target forward,
decode tok/s and speedup against plain decoding timed in the same rep, and how much of the
greedy output loops (the share of generated tokens whose preceding 8-gram already occurred earlier in
the output: a looping output is easy to draft and flatters alpha). The DFlash block length sweep
(K = 1..block-1) gives the best K measured; bench's c_v table (`specdec bench --tables cv`) gives
c_v(S) for the model's pick.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def run(a, prompt_file, spec, k, temp=0.0, seed=1):
    args = [a.specdec, "generate", "-m", a.m, "-f", prompt_file, "-n", str(a.n), "-t", str(a.t), "--json",
            "--no-check", "--seed", str(seed)]
    if temp > 0:
        args += ["--temp", str(temp)]
    if spec == "none":
        args += ["--spec", "none"]
    else:
        args += ["--spec", spec, "-md", a.dflash if spec == "dflash" else a.eagle3, "--draft-max", str(k),
                 "--fixed-k", "--gate", "0"]
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", default=os.path.join(ROOT, "models", "fixture-target.gguf"))
    ap.add_argument("--dflash", default=os.path.join(ROOT, "models", "fixture-dflash.gguf"))
    ap.add_argument("--eagle3", default=os.path.join(ROOT, "models", "fixture-eagle3.gguf"))
    ap.add_argument("--specdec", default=os.path.join(ROOT, "build", "specdec"))
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-t", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ks", default="1,2,3,4,5,6,7")
    ap.add_argument("--eagle3-k", type=int, default=3)
    a = ap.parse_args()
    ks = [int(x) for x in a.ks.split(",")]
    configs = [("eagle3", a.eagle3_k)] + [("dflash", k) for k in ks]
    print("| class | drafter | K | loops | α greedy | acc/round | tok/fwd | speedup greedy | α T0.8 | speedup T0.8 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for pf in sorted(glob.glob(os.path.join(ROOT, "bench", "prompts", "*.txt"))):
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
                for c in configs:
                    res[c][key].append(run(a, pf, c[0], c[1], temp, rep + 1))
        for c in configs:
            g, s = res[c]["g"], res[c]["s"]
            med = lambda xs: statistics.median(xs)  # noqa: E731
            sp_g = med([x["decode_tok_s"] for x in g]) / med(base["g"])
            sp_s = med([x["decode_tok_s"] for x in s]) / med(base["s"])
            print(f"| {cls} | {c[0]} | {c[1]} | {loops:.2f} | {g[0]['acceptance']:.3f} | "
                  f"{g[0]['accepted_per_round']:.2f} | {g[0]['tokens_per_forward']:.2f} | {sp_g:.2f} | "
                  f"{med([x['acceptance'] for x in s]):.3f} | {sp_s:.2f} |", flush=True)


if __name__ == "__main__":
    main()
