// Concurrent clients, specdec serve against llama.cpp (a benchmark, not a
// test; bench/serve_race.sh runs it): for each client count C, in turn,
//   specdec serve --parallel P over HTTP, speculation off / on / auto, then
//   llama.cpp in-process (node-llama-cpp, one context of C sequences),
// each C workers sending R = max(min, per-client x C) greedy requests of the
// same prompt ids and token budget. Prints one markdown table per model
// (total generated tok/s, request latency p50/p99, acceptance, the ratio to
// the same engine and mode at the smallest C) and parity lines; --json FILE
// writes every figure and output.
//
// The modes of specdec (a request selects only "speculative": true|false; the
// drafter is the server's --spec, default auto: n-gram lookup, plus -md or
// the target's MTP block):
//   off   "speculative": false, on the auto server
//   on    a server started with --on-args (default --gate 0): drafts every
//         round, whatever the batch makes a verify window cost
//   auto  "speculative": true on a server with the default gate, which closes
//         per request when drafting stops paying (under load, ARCHITECTURE.md §3,
//         docs/BATCHING.md "Speculation under load")
// Every server starts with --cache-ram 0 --suffix-tokens 0 (before
// --serve-args, which may override them): one server serves every client
// count and mode with the same prompt ids per request index, so a prefix
// cache or a suffix memory would give later rows cache hits and remembered
// drafts that the earlier rows did not get.
import { sseData } from "../sse.mjs";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import { parseArgs } from "node:util";
import { getModuleVersion } from "node-llama-cpp";
import { loadPrompts } from "./lib.mjs";
import { llamaOpen, llamaRace, requestPrompts, pct } from "./parallel_seqs.mjs";

// No memory across requests (see the header): the same ids return row after row.
const NO_REUSE = "--cache-ram 0 --suffix-tokens 0";
const ROOT = path.resolve(new URL("../..", import.meta.url).pathname);
const { values: opt } = parseArgs({
  options: {
    m: { type: "string", multiple: true },
    clients: { type: "string", default: "1 2 4 8 16" },
    n: { type: "string", default: "32" },
    "per-client": { type: "string", default: "2" },
    "min-requests": { type: "string", default: "4" },
    rounds: { type: "string", default: "1" },
    t: { type: "string", default: "2" },
    parallel: { type: "string" },
    modes: { type: "string", default: "off,on,auto" },
    engines: { type: "string", default: "specdec,llama.cpp" },
    specdec: { type: "string", default: path.join(ROOT, "build/specdec") },
    "serve-args": { type: "string", default: "" },
    "on-args": { type: "string", default: "--gate 0" },
    "auto-args": { type: "string", default: "" },
    prompts: { type: "string", default: path.join(ROOT, "bench/prompts") },
    "prompt-chars": { type: "string", default: "160" },
    quick: { type: "boolean" },
    json: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});
const USAGE = `usage: bench/serve_race.sh -m MODEL.gguf [-m MODEL2.gguf] [--clients "1 2 4 8 16"] [-n 32]
    [--per-client 2] [--min-requests 4] [--rounds 1] [-t 2] [--parallel P] [--modes off,on,auto] [--engines specdec,llama.cpp]
    [--serve-args="-md D.gguf"] [--on-args="--gate 0"] [--auto-args=""] [--prompts DIR] [--prompt-chars 160]
    [--quick] [--json OUT.json]
  --quick: clients "1 2", requests = C (at least 2): a smoke run of a minute or two
  --rounds R: the whole client sweep R times over (every engine and mode at every C, then again), each
  cell's figures the median over the rounds (the host's speed drifts: one round per cell is one sample)
  every server starts with ${NO_REUSE} (no prefix cache, no suffix memory: the same prompt
  ids return at every client count); --serve-args may override them`;
if (opt.help || !opt.m?.length) {
  (opt.help ? console.log : console.error)(USAGE);
  process.exit(opt.help ? 0 : 2);
}
if (opt.quick) Object.assign(opt, { clients: "1 2", "per-client": "1", "min-requests": "2" });
const CLIENTS = opt.clients.trim().split(/[\s,]+/).map(Number);
const N = +opt.n, T = +opt.t, PER = +opt["per-client"], MINR = +opt["min-requests"], ROUNDS = +opt.rounds;
const MODES = opt.modes.split(",").filter(Boolean), ENGINES = new Set(opt.engines.split(","));
const bad = (m) => { console.error(`serve_race: ${m}`); process.exit(2); };
if (CLIENTS.some((c) => !(Number.isInteger(c) && c >= 1))) bad(`--clients "${opt.clients}": whole numbers >= 1`);
if (!(Number.isInteger(ROUNDS) && ROUNDS >= 1 && ROUNDS <= 20)) bad(`--rounds ${opt.rounds}: a whole number in 1..20`);
if (![N, T, PER, MINR].every((x) => Number.isInteger(x) && x >= 1)) bad("-n, -t, --per-client, --min-requests: whole numbers >= 1");
for (const e of ENGINES) if (!["specdec", "llama.cpp"].includes(e)) bad(`--engines: ${e} is not specdec or llama.cpp`);
for (const m of MODES) if (!["off", "on", "auto"].includes(m)) bad(`--modes: ${m} is not off, on or auto`);
// the server takes --parallel in [1, 64] (src/server/front.c)
const P = Math.min(64, opt.parallel ? +opt.parallel : Math.max(...CLIENTS));
if (Math.max(...CLIENTS) > P) console.error(`serve_race: note: ${Math.max(...CLIENTS)} clients on --parallel ${P}: the rest wait in the queue`);
const requestsFor = (c) => Math.max(MINR, PER * c);
const log = (s) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${s}\n`);
const words = (s) => s.trim().split(/\s+/).filter(Boolean);

// The head of each prompt file, cut at a line or word end after `chars`
// characters (0: the whole file): short prompts keep the requests decode-bound.
function promptTexts() {
  const chars = +opt["prompt-chars"];
  return loadPrompts(opt.prompts).map((p) => {
    if (!chars || p.text.length <= chars) return p;
    const cut = p.text.slice(0, chars), k = Math.max(cut.lastIndexOf("\n"), cut.lastIndexOf(" "));
    return { ...p, text: k > chars / 2 ? cut.slice(0, k) : cut };
  });
}

// ---- specdec serve ----
async function startServer(model, ctx, extra) {
  const args = ["serve", "-m", model, "--host", "127.0.0.1", "--port", "0", "--queue", "4096", "--parallel", String(P),
    "-t", String(T), "-c", String(ctx), ...words(NO_REUSE), ...words(opt["serve-args"]), ...words(extra)];
  const proc = spawn(opt.specdec, args, { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  const port = await new Promise((resolve, reject) => {
    proc.stderr.on("data", (d) => {
      err += d;
      const m = err.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(+m[1]);
    });
    proc.on("exit", (code) => reject(new Error(`specdec ${args.join(" ")} exited ${code}:\n${err}`)));
  });
  proc.stderr.removeAllListeners("data");
  proc.stderr.resume(); // keep draining its per-request log lines
  return { proc, base: `http://127.0.0.1:${port}`, args: args.join(" ") };
}

async function stopServer(s) {
  if (s.proc.exitCode !== null || s.proc.signalCode !== null) return; // it died (the error says why)
  const done = new Promise((r) => s.proc.once("exit", r));
  s.proc.kill("SIGINT");
  await done;
}

// One streaming /v1/completions request with the prompt as token ids; end to
// end latency as serve_load.mjs measures it (503: retried).
async function request(base, ids, n, speculative) {
  const body = JSON.stringify({ prompt: ids, max_tokens: n, temperature: 0, stream: true,
    stream_options: { include_usage: true }, speculative });
  for (let attempt = 0; ; attempt++) {
    const t0 = performance.now();
    const res = await fetch(base + "/v1/completions", { method: "POST", headers: { "Content-Type": "application/json" }, body });
    if (res.status === 503) { await res.text(); await new Promise((r) => setTimeout(r, 50)); continue; }
    if (!res.ok) throw new Error(`HTTP ${res.status} ${await res.text()}`);
    let text = "", done = false, usage = null, timings = null;
    for await (const c of sseData(res)) {
      if (c === "[DONE]") { done = true; continue; }
      if (c.error) throw new Error(c.error.message);
      if (c.choices?.[0]?.text) text += c.choices[0].text;
      if (c.usage) usage = c.usage;
      if (c.timings) timings = c.timings;
    }
    if (!done || !usage) throw new Error(`stream incomplete (done ${done})`);
    return { ms: performance.now() - t0, tokens: usage.completion_tokens, text,
             drafted: timings?.draft_n ?? 0, accepted: timings?.draft_n_accepted ?? 0 };
  }
}

async function serverRace(server, ids, clients, requests, speculative) {
  let next = 0;
  const res = new Array(requests);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: clients }, async () => {
    while (next < requests) {
      const i = next++;
      res[i] = await request(server.base, ids[i], N, speculative);
    }
  }));
  const wall = (performance.now() - t0) / 1000;
  const sum = (f) => res.reduce((a, r) => a + f(r), 0);
  const tokens = sum((r) => r.tokens), drafted = sum((r) => r.drafted), accepted = sum((r) => r.accepted);
  return { clients, requests, tokens, wall_s: wall, tok_s: tokens / wall, p50_ms: pct(res.map((r) => r.ms), 50),
           p99_ms: pct(res.map((r) => r.ms), 99), drafted, accepted,
           acceptance: drafted ? accepted / drafted : null, outputs: res.map((r) => r.text) };
}

// ---- parity: where two answers to one request part ----
// The number of llama.cpp tokens whose text is a prefix of ours.
function agreeTokens(model, llamaIds, ourText) {
  let k = 0;
  while (k < llamaIds.length && ourText.startsWith(model.detokenize(llamaIds.slice(0, k + 1)))) k++;
  return k;
}

async function raceModel(modelPath) {
  log(`${modelPath}: loading llama.cpp (node-llama-cpp), ${T} threads`);
  const eng = await llamaOpen(modelPath, T);
  const texts = promptTexts();
  const maxR = Math.max(...CLIENTS.map(requestsFor));
  const ids = requestPrompts(eng.model, texts, maxR);
  // every sequence / slot holds its prompt, the answer and a verify window (K <= 64) to spare; in
  // multiples of 256, as node-llama-cpp rounds a sequence's context up to them anyway
  const maxPrompt = Math.max(...ids.map((x) => x.length));
  const ctx = Math.ceil((maxPrompt + N + 72) / 256) * 256;
  log(`prompts ${Math.min(...ids.map((x) => x.length))}..${maxPrompt} tokens, context ${ctx} per sequence / slot, --parallel ${P}`);
  const servers = {};
  if (ENGINES.has("specdec")) {
    if (MODES.includes("off") || MODES.includes("auto")) servers.auto = await startServer(modelPath, ctx, opt["auto-args"]);
    if (MODES.includes("on")) servers.on = await startServer(modelPath, ctx, opt["on-args"]);
    for (const s of Object.values(servers)) await request(s.base, ids[0].slice(0, 8), 2, true); // first touch, off the clock
  }
  const samples = [], outs = {};
  const keep = (engine, mode, c, r, round) => {
    samples.push({ clients: c, engine, mode, round, ...r, outputs: undefined });
    (outs[`${engine}/${mode}`] ??= {})[c] ??= r.outputs; // the first round's: the parity checks
    log(`round ${round + 1}/${ROUNDS} C=${c} ${engine} ${mode}: ${r.tok_s.toFixed(2)} tok/s, p50 ${r.p50_ms.toFixed(0)} ms, ${r.wall_s.toFixed(1)} s`);
  };
  try {
    for (let round = 0; round < ROUNDS; round++) for (const c of CLIENTS) {
      const R = requestsFor(c);
      for (const mode of ENGINES.has("specdec") ? MODES : []) {
        const s = mode === "on" ? servers.on : servers.auto;
        keep("specdec", mode, c, await serverRace(s, ids, c, R, mode !== "off"), round);
      }
      if (ENGINES.has("llama.cpp")) {
        const r = await llamaRace(eng, { clients: c, requests: R, n: N, ctxPerSeq: ctx, ids });
        keep("llama.cpp", "greedy", c, { ...r, acceptance: null }, round); // outputs as ids, for the token-level parity
      }
    }
  } finally {
    for (const s of Object.values(servers)) await stopServer(s);
  }
  const rows = medianRows(samples);
  // ratios to the same engine and mode at the smallest client count
  for (const r of rows) {
    const base = rows.find((x) => x.engine === r.engine && x.mode === r.mode && x.clients === CLIENTS[0]);
    r.ratio = r.tok_s / base.tok_s;
  }
  const parity = parityOf(eng.model, outs);
  const goalC = CLIENTS.includes(8) ? 8 : null;
  if (goalC && CLIENTS[0] === 1)
    parity.lines.push(`goal (total tok/s at 8 clients >= 3x 1 client's): ` + rows.filter((r) => r.clients === goalC)
      .map((r) => `${r.engine} ${r.mode} ${r.ratio.toFixed(2)}x ${r.ratio >= 3 ? "met" : "not met"}`).join(", "));
  const out = { model: modelPath, ctx_per_seq: ctx, parallel: P, n_prompt: ids.map((x) => x.length),
                servers: Object.fromEntries(Object.entries(servers).map(([k, s]) => [k, s.args])), rows, samples, parity,
                outputs: Object.fromEntries(Object.entries(outs).map(([k, v]) => [k, Object.fromEntries(
                  Object.entries(v).map(([c, o]) => [c, o.map((x) => (typeof x === "string" ? x : eng.model.detokenize(x)))]))])) };
  await eng.llama.dispose();
  return out;
}

// One row per engine, mode and client count: the medians over the rounds of
// its total tok/s, p50 and p99 latency and acceptance, with every round's
// tok/s beside them (tok_s_rounds).
function medianRows(samples) {
  const med = (xs) => {
    const v = xs.filter((x) => x != null).sort((a, b) => a - b);
    return v.length ? (v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2) : null;
  };
  const rows = [];
  for (const s of samples) {
    if (rows.some((r) => r.engine === s.engine && r.mode === s.mode && r.clients === s.clients)) continue;
    const cell = samples.filter((x) => x.engine === s.engine && x.mode === s.mode && x.clients === s.clients);
    rows.push({ clients: s.clients, engine: s.engine, mode: s.mode, requests: s.requests, tokens: s.tokens,
                tok_s: med(cell.map((x) => x.tok_s)), p50_ms: med(cell.map((x) => x.p50_ms)),
                p99_ms: med(cell.map((x) => x.p99_ms)), acceptance: med(cell.map((x) => x.acceptance)),
                tok_s_rounds: cell.map((x) => x.tok_s) });
  }
  return rows;
}

// Lossless (specdec on / auto against off, request by request), batch
// invariance (each engine's answer at C against its answer at the smallest C)
// and llama.cpp against specdec off (token by token).
function parityOf(model, outs) {
  const p = { lines: [] };
  const c0 = CLIENTS[0];
  const off = outs["specdec/off"], lc = outs["llama.cpp/greedy"];
  for (const mode of ["on", "auto"]) {
    const o = outs[`specdec/${mode}`];
    if (!o || !off) continue;
    let same = 0, all = 0;
    for (const c of CLIENTS) o[c].forEach((t, i) => { all++; same += t === off[c][i]; });
    p[`lossless_${mode}`] = `${same}/${all}`;
    p.lines.push(`lossless: specdec ${mode} = off on ${same}/${all} requests`);
  }
  for (const [key, o] of Object.entries(outs)) {
    let same = 0, all = 0;
    for (const c of CLIENTS.slice(1)) o[c].forEach((t, i) => {
      if (i >= o[c0].length) return;
      all++;
      same += JSON.stringify(t) === JSON.stringify(o[c0][i]);
    });
    if (all) {
      p[`batch_invariant_${key}`] = `${same}/${all}`;
      p.lines.push(`batch invariance: ${key} at C > ${c0} = at C = ${c0} on ${same}/${all} requests`);
    }
  }
  if (off && lc) {
    const a = agreeTokens(model, lc[c0][0], off[c0][0]);
    const full = model.detokenize(lc[c0][0]) === off[c0][0];
    p.first_request = { agree_tokens: a, llama_tokens: lc[c0][0].length, identical: full };
    p.lines.push(`parity: request 0 at C = ${c0}: llama.cpp and specdec (off) ${full ? "identical" : "part"}: ` +
      `${a}/${lc[c0][0].length} llama.cpp tokens agree${full ? "" : " (random weights may split at a near-tie: reported, not failed)"}`);
    let same = 0, all = 0;
    for (const c of CLIENTS) lc[c].forEach((ids, i) => { all++; same += model.detokenize(ids) === off[c][i]; });
    p.all_requests = `${same}/${all}`;
    p.lines.push(`parity: llama.cpp = specdec (off) on ${same}/${all} requests (all client counts)`);
  }
  return p;
}

const fmt = (x, d = 0) => (x == null ? "–" : x.toFixed(d));
const t0 = performance.now(), load0 = os.loadavg();
const result = { node_llama_cpp: await getModuleVersion(), clients: CLIENTS, n: N, threads: T, parallel: P, rounds: ROUNDS,
                 per_client: PER, min_requests: MINR, prompt_chars: +opt["prompt-chars"], modes: MODES,
                 on_args: opt["on-args"], auto_args: opt["auto-args"], serve_args: opt["serve-args"], serve_defaults: NO_REUSE,
                 cpus: os.cpus().length, loadavg_start: load0, models: [] };
try {
  for (const m of opt.m) result.models.push(await raceModel(m));
} catch (e) {
  console.error(`serve_race: ${e.message}`);
  process.exit(1);
}
result.loadavg_end = os.loadavg();
result.wall_s = (performance.now() - t0) / 1000;

for (const m of result.models) {
  console.log(`\n### ${path.basename(m.model)}: ${N} tokens, temperature 0, ${T} threads each, context ${m.ctx_per_seq} per ` +
    `sequence, specdec serve --parallel ${m.parallel} ${NO_REUSE}${opt["serve-args"] ? " " + opt["serve-args"] : ""} over HTTP, llama.cpp ${result.node_llama_cpp} in-process (no HTTP)\n`);
  const each = ROUNDS > 1 ? ` tok/s of each round |` : "";
  console.log(`| clients | engine | mode | total tok/s${ROUNDS > 1 ? `, median of ${ROUNDS}` : ""} | p50 ms | p99 ms | acceptance | ratio vs C=${CLIENTS[0]} |${each}`);
  console.log(`|---:|---|---|---:|---:|---:|---:|---:|${ROUNDS > 1 ? "---|" : ""}`);
  for (const r of m.rows)
    console.log(`| ${r.clients} | ${r.engine} | ${r.mode} | ${fmt(r.tok_s, 1)} | ${fmt(r.p50_ms)} | ${fmt(r.p99_ms)} | ` +
      `${r.acceptance == null ? "–" : (100 * r.acceptance).toFixed(1) + "%"} | ${fmt(r.ratio, 2)}x |` +
      (ROUNDS > 1 ? ` ${r.tok_s_rounds.map((x) => x.toFixed(1)).join(" / ")} |` : ""));
  console.log("");
  for (const l of m.parity.lines) console.log(l);
}
console.log(`\nratio: total tok/s over the same engine and mode at ${CLIENTS[0]} client${CLIENTS[0] > 1 ? "s" : ""}; ` +
  `requests per cell: max(${MINR}, ${PER} x clients); load average ${load0.map((x) => x.toFixed(1)).join(" ")} at the start, ` +
  `${result.loadavg_end.map((x) => x.toFixed(1)).join(" ")} at the end; ${result.wall_s.toFixed(0)} s`);
if (opt.json) fs.writeFileSync(opt.json, JSON.stringify(result, null, 1) + "\n");
