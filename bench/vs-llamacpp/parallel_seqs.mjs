// llama.cpp's side of bench/serve_race.sh: C concurrent greedy generations on
// one context of C sequences (node-llama-cpp gives each sequence its own KV
// cells and evaluates the pending tokens of all sequences in one llama_decode
// per cycle, so the decodes batch together as llama-server's slots do).
// In-process: no HTTP, no JSON, no tokenizing of the answer on the way out.
//
// Measured the way bench/serve_load.mjs measures `specdec serve`: C workers
// take the R requests in order; a request's latency is from its start (clear
// the sequence) to its last token; total tok/s = generated tokens / wall time
// of all R. Request i gets prompts[i] (token ids, the same ids the server gets).
//
// As a command (standalone run, prints one JSON object):
//   node parallel_seqs.mjs -m MODEL.gguf [-C 4] [-R 8] [-n 32] [-t 2] [--prompts DIR]
import { parseArgs } from "node:util";
import { loadLlama, loadPrompts, tokenizePrompt } from "./lib.mjs";

export const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : null;
};

// One llama.cpp model for the whole race (the context is made per client count).
export async function llamaOpen(modelPath, threads) {
  const llama = await loadLlama(threads);
  const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
  return { llama, model, threads };
}

// The request prompts as ids: "Request i:\n" + the i-th prompt file's text
// (cycling), so no two requests share more than a few leading tokens (a
// server slot that kept the previous prompt would otherwise skip its prefill).
export function requestPrompts(model, prompts, count) {
  return Array.from({ length: count }, (_, i) =>
    tokenizePrompt(model, `Request ${i}:\n${prompts[i % prompts.length].text}`));
}

// One greedy generation of at most n tokens on seq (stops at an end-of-generation token, which is not counted).
async function generate(seq, ids, n) {
  await seq.clearHistory();
  const out = [];
  if (n > 0)
    for await (const tok of seq.evaluate(ids, { temperature: 0 })) {
      out.push(tok);
      if (out.length >= n) break;
    }
  return out;
}

// R requests (ids[0..R-1]) from C concurrent workers on a fresh context of C
// sequences of ctxPerSeq cells each. Returns throughput, latency percentiles
// and every request's generated ids.
export async function llamaRace({ model, threads }, { clients, requests, n, ctxPerSeq, ids, warmup = true }) {
  const context = await model.createContext({
    contextSize: ctxPerSeq, sequences: clients, batchSize: 512, threads: { ideal: threads, min: threads } });
  try {
    const seqs = Array.from({ length: clients }, () => context.getSequence());
    // first touch of the weights and the compute buffers, off the clock (a short prompt per sequence)
    if (warmup) await Promise.all(seqs.map((s) => generate(s, ids[0].slice(0, 8), 2)));
    let next = 0;
    const lat = [], outs = new Array(requests);
    const t0 = performance.now();
    await Promise.all(seqs.map(async (seq) => {
      while (next < requests) {
        const i = next++;
        const s = performance.now();
        outs[i] = await generate(seq, ids[i], n);
        lat.push(performance.now() - s);
      }
    }));
    const wall = (performance.now() - t0) / 1000;
    const tokens = outs.reduce((a, o) => a + o.length, 0);
    return { clients, requests, tokens, wall_s: wall, tok_s: tokens / wall, p50_ms: pct(lat, 50), p99_ms: pct(lat, 99),
             ctx_per_seq: context.contextSize, outputs: outs };
  } finally {
    await context.dispose();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values: o } = parseArgs({ options: {
    m: { type: "string" }, C: { type: "string", default: "4" }, R: { type: "string", default: "8" },
    n: { type: "string", default: "32" }, t: { type: "string", default: "2" },
    prompts: { type: "string", default: new URL("../prompts", import.meta.url).pathname } } });
  if (!o.m) {
    console.error("usage: node parallel_seqs.mjs -m MODEL.gguf [-C clients] [-R requests] [-n max tokens] [-t threads] [--prompts DIR]");
    process.exit(2);
  }
  const eng = await llamaOpen(o.m, +o.t);
  const ids = requestPrompts(eng.model, loadPrompts(o.prompts), +o.R);
  const ctx = Math.max(...ids.map((x) => x.length)) + +o.n + 64;
  const r = await llamaRace(eng, { clients: +o.C, requests: +o.R, n: +o.n, ctxPerSeq: ctx, ids });
  console.log(JSON.stringify({ ...r, outputs: r.outputs.map((x) => eng.model.detokenize(x)) }, null, 1));
  await eng.llama.dispose();
}
