#!/usr/bin/env node
// llama.cpp's load time for a model file: loadModel + createContext (CPU,
// no GPU layers), the work before the first token, timed in this process after
// the llama.cpp binding itself is loaded (not counted). One JSON line:
//   node load_time.mjs MODEL.gguf [THREADS] [CTX]
//   {"load_s": ..., "model_s": ..., "context_s": ...}
// The twin on our side is the load_s field of `specdec generate --json`
// (sd_model_load: header, tokenizer, repacking every weight matrix).
import { loadLlama, nowS } from "./lib.mjs";

const [modelPath, tArg, cArg] = process.argv.slice(2);
if (!modelPath) {
  console.error("usage: node load_time.mjs MODEL.gguf [THREADS] [CTX]");
  process.exit(2);
}
const threads = +(tArg ?? 2), contextSize = +(cArg ?? 256);
const llama = await loadLlama(threads);
const t0 = nowS();
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const t1 = nowS();
const ctx = await model.createContext({ contextSize, threads: { ideal: threads, min: threads }, sequences: 1 });
const t2 = nowS();
console.log(JSON.stringify({ load_s: t2 - t0, model_s: t1 - t0, context_s: t2 - t1 }));
await ctx.dispose();
await model.dispose();
