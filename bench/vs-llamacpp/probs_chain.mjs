#!/usr/bin/env node
// llama.cpp's next-token distribution at every position of a token chain, one
// line per position with the probability of every token id in order: the
// peer's side of moe_parity.sh (specdec's side is sd-probs).
//   node probs_chain.mjs MODEL.gguf ID,ID,...
import { loadLlama } from "./lib.mjs";

const [modelPath, idsArg] = process.argv.slice(2);
if (!modelPath || !idsArg) {
  console.error("usage: node probs_chain.mjs MODEL.gguf ID,ID,...");
  process.exit(2);
}
const ids = idsArg.split(",").map(Number);
const llama = await loadLlama(1);
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const ctx = await model.createContext({ contextSize: 256, threads: { ideal: 1, min: 1 }, sequences: 1 });
const seq = ctx.getSequence();
const lines = [];
for (const t of ids) {
  const [r] = await seq.controlledEvaluate([[t, { generateNext: { probabilities: true } }]]);
  const p = new Float64Array(r.next.probabilities.size); // every token id has an entry
  for (const [tok, pr] of r.next.probabilities.entries()) p[tok] = pr;
  lines.push(Array.from(p, (x) => x.toPrecision(7)).join(" "));
}
console.log(lines.join("\n"));
await ctx.dispose();
await model.dispose();
await llama.dispose();
