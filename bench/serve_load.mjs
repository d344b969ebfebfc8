// Load test of `specdec serve` (not a timed test): C concurrent clients send R
// streaming chat requests in total, each with its own prompt; reports
// throughput (requests/s, generated tokens/s), latency p50/p99 (whole request
// and time to first token), and checks that nothing was lost: every request
// got [DONE], a finish_reason and usage, or a 503 (retried until served).
// usage: node serve_load.mjs BASE_URL CLIENTS REQUESTS MAX_TOKENS [SPECULATIVE=true]
import { sseData } from "./sse.mjs";
const [base, clients, requests, maxTokens, specArg] = process.argv.slice(2);
const C = parseInt(clients, 10), R = parseInt(requests, 10), N = parseInt(maxTokens, 10);
const speculative = specArg !== "false";

async function one(i) {
  const body = JSON.stringify({
    messages: [{ role: "user", content: `Request ${i}: def handler_${i}(event, context):` }],
    max_tokens: N, temperature: 0, stream: true, stream_options: { include_usage: true }, speculative });
  for (let attempt = 0; ; attempt++) {
    const t0 = performance.now();
    const res = await fetch(base + "/v1/chat/completions", { method: "POST", headers: { "Content-Type": "application/json" }, body });
    if (res.status === 503) { await res.text(); await new Promise((r) => setTimeout(r, 50)); continue; }
    if (!res.ok) throw new Error(`request ${i}: HTTP ${res.status} ${await res.text()}`);
    let ttft = null, done = false, finish = null, usage = null, timings = null;
    for await (const c of sseData(res)) {
      if (c === "[DONE]") { done = true; continue; }
      if (c.error) throw new Error(`request ${i}: ${c.error.message}`);
      if (ttft === null && c.choices?.[0]?.delta?.content) ttft = performance.now() - t0;
      if (c.choices?.[0]?.finish_reason) finish = c.choices[0].finish_reason;
      if (c.usage) usage = c.usage;
      if (c.timings) timings = c.timings;
    }
    if (!done || !finish || !usage) throw new Error(`request ${i}: stream incomplete (done ${done}, finish ${finish})`);
    return { ms: performance.now() - t0, ttft: ttft ?? performance.now() - t0, tokens: usage.completion_tokens,
             drafted: timings.draft_n, accepted: timings.draft_n_accepted, retries: attempt };
  }
}

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))]; };
let next = 0;
const results = [], errors = [];
const t0 = performance.now();
await Promise.all(Array.from({ length: C }, async () => {
  while (next < R) {
    const i = next++;
    try { results.push(await one(i)); } catch (e) { errors.push(e.message); }
  }
}));
const wall = (performance.now() - t0) / 1000;
const tokens = results.reduce((a, r) => a + r.tokens, 0);
const drafted = results.reduce((a, r) => a + r.drafted, 0), accepted = results.reduce((a, r) => a + r.accepted, 0);
const retries = results.reduce((a, r) => a + r.retries, 0);
console.log(`clients ${C}, requests ${R}, max_tokens ${N}, speculative ${speculative}`);
console.log(`completed ${results.length}/${R}, lost ${R - results.length}, errors ${errors.length}, 503 retries ${retries}`);
console.log(`wall ${wall.toFixed(2)} s | ${(results.length / wall).toFixed(2)} req/s | ${(tokens / wall).toFixed(1)} generated tok/s`);
console.log(`latency p50 ${pct(results.map((r) => r.ms), 50).toFixed(0)} ms, p99 ${pct(results.map((r) => r.ms), 99).toFixed(0)} ms | ` +
            `first token p50 ${pct(results.map((r) => r.ttft), 50).toFixed(0)} ms, p99 ${pct(results.map((r) => r.ttft), 99).toFixed(0)} ms`);
console.log(`acceptance ${drafted ? (100 * accepted / drafted).toFixed(1) : "–"}% (${accepted}/${drafted})`);
for (const e of errors.slice(0, 5)) console.log("error:", e);
process.exit(errors.length || results.length !== R ? 1 : 0);
