#!/usr/bin/env node
// Prints llama.cpp's greedy token ids for a prompt, space-separated on one
// line: the peer's side of the greedy-parity check (compare_greedy.sh).
//   node greedy_ids.mjs MODEL.gguf PROMPT N [THREADS]
// The prompt is tokenized as node-llama-cpp's completion API does (BOS when
// the model asks for it, special-token texts not parsed); generation runs at
// temperature 0 and does not stop at end-of-generation tokens, so exactly N
// ids come out, as `specdec bench --greedy-ids` prints them.
import { loadLlama, tokenizePrompt } from "./lib.mjs";

const [modelPath, prompt, nArg, tArg] = process.argv.slice(2);
if (!modelPath || prompt == null || !nArg) {
  console.error("usage: node greedy_ids.mjs MODEL.gguf PROMPT N [THREADS]");
  process.exit(2);
}
const n = +nArg, threads = +(tArg ?? 2);
const llama = await loadLlama(threads);
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const ids = tokenizePrompt(model, prompt);
const ctx = await model.createContext({ contextSize: Math.max(256, ids.length + n + 8), threads, sequences: 1 });
const seq = ctx.getSequence();
const out = [];
for await (const tok of seq.evaluate(ids, { temperature: 0, yieldEogToken: true })) {
  out.push(tok);
  if (out.length >= n) break;
}
console.log(out.join(" "));
if (process.env.SHOW_PROMPT_IDS) console.error("prompt ids:", ids.join(" "));
await llama.dispose();
