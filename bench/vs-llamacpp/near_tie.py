#!/usr/bin/python3
"""Where specdec's and llama.cpp's greedy ids first differ on MODEL, how close
the float64 reference (tools/reference/torch_ref.py) finds the two tokens.

usage: near_tie.py MODEL.gguf PROMPT N [GROWN.gguf]  (from the repository root;
needs Debian's python3-torch, and node-llama-cpp in bench/vs-llamacpp/node_modules
unless GROWN is given: then the other side is specdec on GROWN, a model grown
from MODEL by sd-genmodel --grow, instead of llama.cpp on MODEL)

The reference runs on MODEL dequantized to F32 by `specdec quantize ... f32`
(our dequantization is bitwise llama.cpp's, tests/numerics/test_quant_golden.c),
so it sees exactly the weights both engines use, in float64 with exact
activations. Prints, at the first difference, the reference logits of both
engines' tokens and the reference's own argmax: a gap that is small next to
the logits' spread (and below the 8-bit activation rounding both engines do)
is a near-tie, not a bug."""
import os, subprocess, sys, tempfile
import numpy as np

def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()

def main():
    model, prompt, n = sys.argv[1], sys.argv[2], sys.argv[3]
    specdec = os.environ.get("SPECDEC", "build/specdec")
    ours = [int(t) for t in run([specdec, "bench", "-m", model, "--greedy-ids", prompt, "-n", n]).split()]
    if len(sys.argv) > 4:
        theirs = [int(t) for t in run([specdec, "bench", "-m", sys.argv[4], "--greedy-ids", prompt, "-n", n]).split()]
    else:
        theirs = [int(t) for t in run(["node", "bench/vs-llamacpp/greedy_ids.mjs", model, prompt, n]).split()]
    i = next((k for k in range(min(len(ours), len(theirs))) if ours[k] != theirs[k]), None)
    if i is None:
        print("identical: %d/%d" % (len(ours), len(ours)))
        return
    ids = [int(t) for t in run([specdec, "tokenize", "-m", model, "--add-special", "-p", prompt]).split()]
    with tempfile.TemporaryDirectory() as tmp:
        f32, out = os.path.join(tmp, "f32.gguf"), os.path.join(tmp, "logits.f32")
        run([specdec, "quantize", model, f32, "f32"])
        seq = ids + ours[:i]
        run(["/usr/bin/python3", "tools/reference/torch_ref.py", f32, "--tokens", ",".join(map(str, seq)),
             "--out", out, "--threads", "2"])
        logits = np.fromfile(out, dtype="<f4").reshape(len(seq), -1)[-1].astype(np.float64)
    top = int(np.argmax(logits))
    other = "grown" if len(sys.argv) > 4 else "llama.cpp"
    print(("first difference at generated token %d: specdec %d (ref logit %.6f), " + other + " %d (ref logit %.6f); "
           "reference argmax %d (%.6f); gap %.2e, logit std %.3f") % (
              i, ours[i], logits[ours[i]], theirs[i], logits[theirs[i]], top, logits[top],
              abs(logits[ours[i]] - logits[theirs[i]]), logits.std()))

if __name__ == "__main__":
    main()
