// The race of best against best (issue 41): one target file (+ optional draft
// model / EAGLE-3 head), each engine in each of its speculative modes, through
// each engine's own HTTP server: llama.cpp's llama-server (built from the
// source node-llama-cpp ships, build_llamacpp.sh) and `specdec serve`.
//
// A cell is one engine in one mode with one setting (llama.cpp: --spec-type,
// --spec-draft-n-max, --spec-draft-p-min; specdec: --spec, --draft-max). Each
// round starts every cell's server in turn (the two engines' cells
// interleaved, the order rotated round by round so that both engines see the
// same load), sends it the same items (prompt, temperature, seed, token
// budget) in the same order, and stops it. Per cell and prompt class: decode
// tok/s (the server's own predicted_per_second summed as tokens / decode time
// over the class's items, then the median over rounds), α (accepted / drafted),
// accepted per verify round, whether the output equals the same engine's
// plain output on the same item (llama.cpp's speculation is not checked by
// anything else; ours is LOSSLESS by design), and the loop share of the
// output. Then, per class, each engine's best cell, ours ÷ theirs, and each
// engine's best ÷ its own plain decoding.
//
// Classes: code, rag (greedy), free (temperature --free-temp with --seeds),
// and trace:NAME (bench/traces/NAME.trace: a sequence of requests, `{{out:N}}`
// replaced by this cell's own answer to request N, greedy). One server serves
// every item of a round, so memories kept across requests (llama.cpp's
// ngram-mod / ngram-cache, our suffix memory) carry from item to item alike.
//
//   node bench/vs-llamacpp/race.mjs --help
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import http from "node:http";
import { spawn } from "node:child_process";
import { parseArgs } from "node:util";
import { loadPrompts, median } from "./lib.mjs";

const ROOT = path.resolve(new URL("../..", import.meta.url).pathname);
const LLAMA_BIN_DEFAULT = (() => {
  const d = path.join(ROOT, "cache/llama.cpp");
  if (!fs.existsSync(d)) return "";
  for (const c of fs.readdirSync(d)) {
    const p = path.join(d, c, "build/bin/llama-server");
    if (fs.existsSync(p)) return p;
  }
  return "";
})();
const NGRAMS = ["ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache"];
const USAGE = `usage: node bench/vs-llamacpp/race.mjs -m TARGET.gguf [-md DRAFT.gguf] [--eagle3 HEAD.gguf] [options]

  --classes LIST        code,rag,free and/or trace:NAME (bench/traces/NAME.trace); default code,rag,free
  --per-class N         prompt files per class (bench/prompts/CLASS-*.txt, sorted); default 1
  -n N                  tokens per request (both engines; stops early only at an end-of-generation token); default 64
  --rounds R            rounds (every cell once per round, order rotated); default 3
  -t N                  threads, both engines; default 2
  -c N                  context per server; default 2048
  --free-temp T         temperature of the free class; default 0.7 (code, rag and traces: greedy)
  --seeds LIST          seeds of the free class, one request each; default 1,2,3
  --llama-modes LIST    llama.cpp --spec-type values, ';'-separated (a value may combine modes with ','):
                        default: none; draft-simple (with -md); draft-mtp (a file with MTP); draft-eagle3
                        (with --eagle3); every n-gram mode; draft-mtp,N for every n-gram mode N (with MTP)
  --n-max LIST          --spec-draft-n-max values to sweep (1..8); default 3 (llama.cpp's default)
  --p-min LIST          --spec-draft-p-min values to sweep; default 0
  --specdec-modes LIST  none,ngram,draft,mtp,eagle3,suffix,auto (those that apply); default all that apply
  --specdec-k LIST      --draft-max values for specdec's speculative modes; default 8 (adaptive K below it)
  --engines LIST        specdec,llama.cpp; default both
  --llama-args="ARGS"   more llama-server options for every llama.cpp cell, e.g. --llama-args="--poll 0" (no busy-wait
                        between forwards: on a loaded machine its default polling starves it)
  --llama-server PATH   default cache/llama.cpp/<commit>/build/bin/llama-server (build_llamacpp.sh)
  --specdec PATH        default build/specdec
  --prompts DIR, --traces DIR   default bench/prompts, bench/traces
  --json OUT.json       every sample, output and summary;  --out-md OUT.md  the tables (also printed)

Every server: -t N, one slot, its default caches (prompt cache; specdec's suffix memory), started
fresh per cell per round. Decode tok/s is the server's predicted_per_second definition (tokens
after the first over the time from the first token), summed over a class's items.`;

const { values: opt } = parseArgs({
  options: {
    m: { type: "string" }, md: { type: "string" }, eagle3: { type: "string" },
    classes: { type: "string", default: "code,rag,free" }, "per-class": { type: "string", default: "1" },
    n: { type: "string", short: "n", default: "64" }, rounds: { type: "string", default: "3" },
    t: { type: "string", short: "t", default: "2" }, c: { type: "string", short: "c", default: "2048" },
    "free-temp": { type: "string", default: "0.7" }, seeds: { type: "string", default: "1,2,3" },
    "llama-modes": { type: "string" }, "n-max": { type: "string", default: "3" }, "p-min": { type: "string", default: "0" },
    "specdec-modes": { type: "string" }, "specdec-k": { type: "string", default: "8" },
    engines: { type: "string", default: "specdec,llama.cpp" }, "llama-args": { type: "string", default: "" },
    "llama-server": { type: "string", default: LLAMA_BIN_DEFAULT }, specdec: { type: "string", default: path.join(ROOT, "build/specdec") },
    prompts: { type: "string", default: path.join(ROOT, "bench/prompts") }, traces: { type: "string", default: path.join(ROOT, "bench/traces") },
    json: { type: "string" }, "out-md": { type: "string" }, help: { type: "boolean", short: "h" },
  },
  allowPositionals: false,
  args: process.argv.slice(2).map((a) => (a === "-md" ? "--md" : a)), // llama.cpp's spelling of the draft option
});
if (opt.help) { console.log(USAGE); process.exit(0); }
const bad = (m) => { console.error(`race: ${m}`); process.exit(2); };
if (!opt.m) bad("-m TARGET.gguf is required (--help)");
for (const f of [opt.m, opt.md, opt.eagle3]) if (f && !fs.existsSync(f)) bad(`${f}: no such file`);
const N = +opt.n, ROUNDS = +opt.rounds, T = +opt.t, CTX = +opt.c, FREE_T = +opt["free-temp"];
if (![N, ROUNDS, T, CTX].every((x) => Number.isInteger(x) && x >= 1)) bad("-n, --rounds, -t, -c: whole numbers >= 1");
const list = (s) => s.split(",").map((x) => x.trim()).filter(Boolean);
const SEEDS = list(opt.seeds).map(Number), NMAX = list(opt["n-max"]).map(Number), PMIN = list(opt["p-min"]).map(Number);
if (NMAX.some((k) => !(Number.isInteger(k) && k >= 1 && k <= 64))) bad("--n-max: whole numbers in 1..64");
const ENGINES = new Set(list(opt.engines));
const log = (s) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${s}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- the target file: does it carry an MTP block? (GGUF key <arch>.nextn_predict_layers) ----
function ggufHasMtp(file) {
  // Read the head of the file and look for the key with a non-zero u32 after it: the
  // metadata comes before the tensor data, well inside the first 4 MiB.
  const fd = fs.openSync(file, "r"), buf = Buffer.alloc(4 << 20);
  const n = fs.readSync(fd, buf, 0, buf.length, 0);
  fs.closeSync(fd);
  const key = ".nextn_predict_layers";
  for (let i = buf.indexOf(key); i >= 0 && i < n; i = buf.indexOf(key, i + 1)) {
    const type = buf.readUInt32LE(i + key.length); // GGUF value type: 4 = u32, 5 = i32
    if (type === 4 || type === 5) return buf.readUInt32LE(i + key.length + 4) > 0;
  }
  return false;
}
const HAS_MTP = ggufHasMtp(opt.m);

// ---- cells ----
function llamaCells() {
  let modes;
  if (opt["llama-modes"]) modes = opt["llama-modes"].split(";").map((s) => s.trim()).filter(Boolean);
  else {
    modes = ["none"];
    if (opt.md) modes.push("draft-simple");
    if (HAS_MTP) modes.push("draft-mtp");
    if (opt.eagle3) modes.push("draft-eagle3");
    modes.push(...NGRAMS);
    if (HAS_MTP) modes.push(...NGRAMS.map((g) => `draft-mtp,${g}`));
  }
  const cells = [];
  for (const m of modes) {
    if (m === "none") { cells.push({ engine: "llama.cpp", mode: "none", args: ["--spec-type", "none"] }); continue; }
    const needsDraft = m.includes("draft-simple") || m.includes("draft-eagle3");
    const draftArgs = m.includes("draft-eagle3") ? ["-md", opt.eagle3] : m.includes("draft-simple") ? ["-md", opt.md] : [];
    if (needsDraft && !draftArgs[1]) bad(`llama.cpp mode ${m} needs ${m.includes("eagle3") ? "--eagle3" : "-md"}`);
    for (const k of NMAX) for (const p of PMIN)
      cells.push({ engine: "llama.cpp", mode: m, n_max: k, p_min: p,
        args: ["--spec-type", m, "--spec-draft-n-max", String(k), "--spec-draft-p-min", String(p), ...draftArgs] });
  }
  return cells;
}
function specdecCells() {
  let modes = opt["specdec-modes"] ? list(opt["specdec-modes"]) : ["none", "ngram", "draft", "mtp", "eagle3", "suffix", "auto"];
  if (!opt["specdec-modes"]) modes = modes.filter((m) => (m !== "draft" || opt.md) && (m !== "mtp" || HAS_MTP) && (m !== "eagle3" || opt.eagle3));
  const cells = [];
  for (const m of modes) {
    const md = m === "eagle3" ? ["-md", opt.eagle3] : (m === "draft" || m === "auto") && opt.md ? ["-md", opt.md] : [];
    if (m === "none") { cells.push({ engine: "specdec", mode: "none", args: ["--spec", "none"] }); continue; }
    for (const k of list(opt["specdec-k"])) cells.push({ engine: "specdec", mode: m, n_max: +k, args: ["--spec", m, "--draft-max", k, ...md] });
  }
  return cells;
}
const cellName = (c) => c.engine === "specdec"
  ? (c.mode === "none" ? "none" : `${c.mode} K${c.n_max}`)
  : (c.mode === "none" ? "none" : `${c.mode} n${c.n_max}${c.p_min ? ` p${c.p_min}` : ""}`);

// ---- items: the same requests to every cell ----
function parseTrace(file) {
  const reqs = [];
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    const m = line.match(/^=== (.*)$/);
    if (m) { reqs.push({ name: m[1], lines: [] }); continue; }
    if (!reqs.length) continue; // the comments before the first request
    reqs[reqs.length - 1].lines.push(line);
  }
  return reqs.map((r) => {
    while (r.lines.length && r.lines[r.lines.length - 1] === "") r.lines.pop();
    return { name: r.name, text: r.lines.join("\n") };
  });
}
function items() {
  const out = [], prompts = loadPrompts(opt.prompts);
  for (const cls of list(opt.classes)) {
    if (cls.startsWith("trace:")) {
      const f = path.join(opt.traces, `${cls.slice(6)}.trace`);
      if (!fs.existsSync(f)) bad(`${f}: no such trace`);
      out.push({ cls, trace: parseTrace(f), temp: 0, seed: 0, name: cls });
      continue;
    }
    const ps = prompts.filter((p) => p.cls === cls).slice(0, +opt["per-class"]);
    if (!ps.length) bad(`no prompt of class ${cls} in ${opt.prompts}`);
    for (const p of ps) {
      if (cls === "free") for (const s of SEEDS) out.push({ cls, name: `${p.name} seed ${s}`, text: p.text, temp: FREE_T, seed: s });
      else out.push({ cls, name: p.name, text: p.text, temp: 0, seed: 0 });
    }
  }
  return out;
}

// ---- servers ----
async function freePort() {
  const net = await import("node:net");
  return new Promise((res) => { const s = net.createServer(); s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => res(p)); }); });
}
async function startServer(cell) {
  const port = await freePort();
  let cmd, args;
  if (cell.engine === "llama.cpp") {
    cmd = opt["llama-server"];
    args = ["-m", opt.m, "-t", String(T), "-c", String(CTX), "-np", "1", "--host", "127.0.0.1", "--port", String(port),
      "--metrics", "--no-webui", ...cell.args, ...opt["llama-args"].split(/\s+/).filter(Boolean)];
  } else {
    cmd = opt.specdec;
    args = ["serve", "-m", opt.m, "-t", String(T), "-c", String(CTX), "--parallel", "1", "--host", "127.0.0.1", "--port", String(port), ...cell.args];
  }
  const proc = spawn(cmd, args, { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  proc.stderr.on("data", (d) => { err += d; if (err.length > 1e6) err = err.slice(-5e5); });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`${cmd} ${args.join(" ")} exited ${proc.exitCode}:\n${err.slice(-2000)}`);
    try { const r = await fetch(base + "/health"); if (r.ok) break; } catch { /* not up yet */ }
    if (i > 1200) throw new Error(`${cmd} did not come up in 10 min`);
    await sleep(250);
  }
  return { proc, base, cmd: `${path.basename(cmd)} ${args.join(" ")}` };
}
async function stopServer(s) {
  if (s.proc.exitCode !== null) return;
  const done = new Promise((r) => s.proc.once("exit", r));
  s.proc.kill("SIGTERM");
  const t = setTimeout(() => s.proc.kill("SIGKILL"), 10000);
  await done; clearTimeout(t);
}
// POST JSON without a deadline: fetch() gives up after 300 s without response headers, and a
// non-streamed answer on a loaded 2-core machine can take longer than that.
function postJson(url, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", headers: { "Content-Type": "application/json" } }, (res) => {
      let data = "";
      res.setEncoding("utf8");
      res.on("data", (d) => { data += d; });
      res.on("end", () => resolve({ ok: res.statusCode === 200, status: res.statusCode, text: data }));
      res.on("error", reject);
    });
    req.setTimeout(0);
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}
async function llamaDrafts(base) { // verify steps so far (llama.cpp reports them only in /metrics)
  const t = await (await fetch(base + "/metrics")).text();
  const m = t.match(/spec_decode_num_drafts_total\s+([0-9.e+]+)/);
  return m ? +m[1] : 0;
}
async function tokenize(engine, base, text) {
  const j = JSON.parse((await postJson(base + "/tokenize", { content: text, add_special: false })).text);
  return (j.tokens ?? []).map((x) => (typeof x === "object" ? x.id : x));
}
async function complete(cell, s, text, temp, seed, n = N) {
  let body, url, rounds0 = 0;
  if (cell.engine === "llama.cpp") {
    rounds0 = await llamaDrafts(s.base);
    url = "/completion";
    body = { prompt: text, n_predict: n, temperature: temp, seed, top_k: 0, top_p: 1, min_p: 0, typical_p: 1,
      repeat_penalty: 1, presence_penalty: 0, frequency_penalty: 0, dry_multiplier: 0, xtc_probability: 0,
      samplers: ["top_k", "top_p", "min_p", "temperature"], return_tokens: true,
      // the same token count as ours: a sampled end-of-generation token must not end its run after 3 tokens
      ignore_eos: true };
  } else {
    url = "/v1/completions";
    body = { prompt: text, max_tokens: n, temperature: temp, seed, top_k: 0, top_p: 1, min_p: 0 };
  }
  const r = await postJson(s.base + url, body);
  if (!r.ok) throw new Error(`${cell.engine} HTTP ${r.status}: ${r.text.slice(0, 300)}`);
  const j = JSON.parse(r.text);
  const t = j.timings ?? {};
  const out = cell.engine === "llama.cpp" ? j.content : j.choices[0].text;
  const tokens = cell.engine === "llama.cpp" && j.tokens ? j.tokens : await tokenize(cell.engine, s.base, out);
  const rounds = cell.engine === "llama.cpp" ? (await llamaDrafts(s.base)) - rounds0 : (t.draft_rounds ?? 0);
  return { text: out, tokens, n: t.predicted_n, ms: t.predicted_ms, drafted: t.draft_n ?? 0, accepted: t.draft_n_accepted ?? 0, rounds };
}

// Share of the output's tokens whose 8-gram ending there occurred earlier in prompt + output.
function loopShare(promptIds, outIds) {
  const all = [...promptIds, ...outIds], seen = new Set();
  let loops = 0;
  for (let i = 7; i < all.length; i++) {
    const key = all.slice(i - 7, i + 1).join(",");
    if (i >= promptIds.length && seen.has(key)) loops++;
    seen.add(key);
  }
  return outIds.length ? loops / outIds.length : 0;
}

// One cell, one round: every item in order.
async function runCell(cell, its) {
  const s = await startServer(cell);
  const res = [];
  try {
    await complete(cell, s, "Hello", 0, 0, 2); // first touch (page cache, thread pool), off the clock
    for (const it of its) {
      if (it.trace) {
        const outs = [];
        let sum = { n: 0, ms: 0, drafted: 0, accepted: 0, rounds: 0, loopTok: 0, tokens: [] };
        for (const q of it.trace) {
          const text = q.text.replace(/\{\{out:(\d+)\}\}/g, (_, k) => outs[+k - 1] ?? "");
          const o = await complete(cell, s, text, 0, 0);
          outs.push(o.text);
          const pids = await tokenize(cell.engine, s.base, text);
          for (const f of ["n", "ms", "drafted", "accepted", "rounds"]) sum[f] += o[f];
          sum.loopTok += loopShare(pids, o.tokens) * o.tokens.length;
          sum.tokens.push(...o.tokens);
        }
        res.push({ ...sum, text: outs.join("\n\u241e\n"), loop: sum.tokens.length ? sum.loopTok / sum.tokens.length : 0 });
      } else {
        const o = await complete(cell, s, it.text, it.temp, it.seed);
        o.loop = loopShare(await tokenize(cell.engine, s.base, it.text), o.tokens);
        res.push(o);
      }
    }
  } finally {
    await stopServer(s);
  }
  return { cmd: s.cmd, res };
}

// Where two outputs of one engine part: the first differing token (or null).
function firstDiff(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? null : n;
}

async function main() {
  const its = items();
  const cells = [...(ENGINES.has("specdec") ? specdecCells() : []), ...(ENGINES.has("llama.cpp") ? llamaCells() : [])];
  if (ENGINES.has("llama.cpp") && !fs.existsSync(opt["llama-server"])) bad(`no llama-server (run bench/vs-llamacpp/build_llamacpp.sh, or --llama-server)`);
  if (ENGINES.has("specdec") && !fs.existsSync(opt.specdec)) bad(`no ${opt.specdec} (build it, or --specdec)`);
  // interleave the engines' cells: ours, theirs, ours, ...
  const ours = cells.filter((c) => c.engine === "specdec"), theirs = cells.filter((c) => c.engine === "llama.cpp");
  const order = [];
  for (let i = 0; i < Math.max(ours.length, theirs.length); i++) { if (ours[i]) order.push(ours[i]); if (theirs[i]) order.push(theirs[i]); }
  log(`${path.basename(opt.m)}${opt.md ? ` + ${path.basename(opt.md)}` : ""}: MTP ${HAS_MTP ? "yes" : "no"}, ${order.length} cells x ${its.length} items x ${ROUNDS} rounds, -n ${N}, -t ${T}`);
  const load0 = os.loadavg(), t0 = Date.now();
  const samples = []; // {cell index, round, res[]}
  for (let r = 0; r < ROUNDS; r++) {
    const rot = order.length ? (r * Math.max(1, Math.floor(order.length / ROUNDS))) % order.length : 0;
    for (let i = 0; i < order.length; i++) {
      const ci = (rot + i) % order.length, cell = order[ci];
      try {
        const { cmd, res } = await runCell(cell, its);
        cell.cmd = cmd;
        samples.push({ ci, round: r, res });
        const n = res.reduce((a, x) => a + x.n, 0), ms = res.reduce((a, x) => a + x.ms, 0);
        log(`round ${r + 1}/${ROUNDS} ${cell.engine} ${cellName(cell)}: ${(n * 1e3 / ms).toFixed(2)} tok/s over ${its.length} items`);
        // the tables so far: a run stopped early still leaves its medians
        if (!(r === ROUNDS - 1 && i === order.length - 1)) summarize(its, order, samples, load0, t0, r);
      } catch (e) {
        log(`round ${r + 1}/${ROUNDS} ${cell.engine} ${cellName(cell)}: FAILED ${e.message.split("\n")[0]}`);
        cell.error = e.message.slice(0, 2000);
      }
    }
  }
  return summarize(its, order, samples, load0, t0, ROUNDS);
}

function summarize(its, order, samples, load0, t0, done) {
  const classes = [...new Set(its.map((x) => x.cls))];
  const plainOf = (engine) => order.findIndex((c) => c.engine === engine && c.mode === "none");
  const rows = [];
  for (const cls of classes) {
    const idx = its.map((x, i) => (x.cls === cls ? i : -1)).filter((i) => i >= 0);
    for (let ci = 0; ci < order.length; ci++) {
      const c = order[ci], ss = samples.filter((s) => s.ci === ci);
      if (!ss.length) continue;
      const perRound = ss.map((s) => { const n = idx.reduce((a, i) => a + s.res[i].n, 0), ms = idx.reduce((a, i) => a + s.res[i].ms, 0); return n * 1e3 / ms; });
      const tot = (f) => ss.reduce((a, s) => a + idx.reduce((b, i) => b + s.res[i][f], 0), 0);
      const drafted = tot("drafted"), accepted = tot("accepted"), rounds = tot("rounds");
      // same output as the engine's own plain decoding on the same item and round?
      const pi = plainOf(c.engine);
      let same = 0, all = 0; const diffs = [];
      if (c.mode !== "none" && pi >= 0) for (const s of ss) {
        const p = samples.find((x) => x.ci === pi && x.round === s.round);
        if (!p) continue;
        for (const i of idx) {
          all++;
          const d = s.res[i].text === p.res[i].text ? null : firstDiff(s.res[i].tokens, p.res[i].tokens);
          if (s.res[i].text === p.res[i].text) same++; else diffs.push(d);
        }
      }
      const loops = ss.flatMap((s) => idx.map((i) => s.res[i].loop));
      rows.push({ cls, engine: c.engine, mode: c.mode, n_max: c.n_max ?? null, p_min: c.p_min ?? null, cell: cellName(c),
        tok_s: median(perRound), tok_s_rounds: perRound, alpha: drafted ? accepted / drafted : null,
        accepted_per_round: rounds ? accepted / rounds : null, drafted, accepted, rounds,
        same_as_plain: c.mode === "none" ? null : `${same}/${all}`, first_diff_tokens: diffs,
        loop: loops.reduce((a, x) => a + x, 0) / loops.length, cmd: c.cmd });
    }
  }
  const best = [];
  for (const cls of classes) {
    const r = rows.filter((x) => x.cls === cls);
    const top = (e) => r.filter((x) => x.engine === e).sort((a, b) => b.tok_s - a.tok_s)[0];
    const plain = (e) => r.find((x) => x.engine === e && x.mode === "none");
    const o = top("specdec"), l = top("llama.cpp");
    best.push({ cls, ours: o?.cell, ours_tok_s: o?.tok_s, theirs: l?.cell, theirs_tok_s: l?.tok_s,
      ratio: o && l ? o.tok_s / l.tok_s : null, ours_plain: plain("specdec")?.tok_s, theirs_plain: plain("llama.cpp")?.tok_s,
      ours_vs_plain: o && plain("specdec") ? o.tok_s / plain("specdec").tok_s : null,
      theirs_vs_plain: l && plain("llama.cpp") ? l.tok_s / plain("llama.cpp").tok_s : null,
      loop_ours_plain: plain("specdec")?.loop, loop_theirs_plain: plain("llama.cpp")?.loop });
  }
  const f = (x, d = 2) => (x == null || !Number.isFinite(x) ? "–" : x.toFixed(d));
  const pct = (x) => (x == null ? "–" : `${(100 * x).toFixed(0)}%`);
  const lines = [];
  lines.push(`### ${path.basename(opt.m)}${opt.md ? ` + ${path.basename(opt.md)}` : ""}${opt.eagle3 ? ` + ${path.basename(opt.eagle3)}` : ""}: -n ${N}, ${T} threads, ${done === ROUNDS ? `${ROUNDS} rounds` : `PARTIAL: in round ${done + 1} of ${ROUNDS}`} (medians), free class T ${FREE_T} seeds ${SEEDS.join(",")}`);
  lines.push("");
  lines.push(`command: node bench/vs-llamacpp/race.mjs ${process.argv.slice(2).join(" ")}`);
  lines.push(`load average ${load0.map((x) => x.toFixed(1)).join(" ")} at the start, ${os.loadavg().map((x) => x.toFixed(1)).join(" ")} at the end; ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  lines.push("");
  lines.push("| class | engine | mode | tok/s | rounds' tok/s | α | accepted/round | = own plain | first diff (token) | loop |");
  lines.push("|---|---|---|---:|---|---:|---:|---:|---|---:|");
  for (const r of rows) lines.push(`| ${r.cls} | ${r.engine} | ${r.cell} | ${f(r.tok_s)} | ${r.tok_s_rounds.map((x) => f(x, 1)).join(" / ")} | ` +
    `${r.alpha == null ? "–" : f(r.alpha)} | ${f(r.accepted_per_round)} | ${r.same_as_plain ?? "–"} | ` +
    `${r.first_diff_tokens.length ? r.first_diff_tokens.map((d) => d ?? "text").join(",") : "–"} | ${pct(r.loop)} |`);
  lines.push("");
  lines.push("Best against best (each engine's fastest cell per class):");
  lines.push("");
  lines.push("| class | specdec best | tok/s | ÷ its plain | llama.cpp best | tok/s | ÷ its plain | ours ÷ theirs | loop (plain: ours / theirs) |");
  lines.push("|---|---|---:|---:|---|---:|---:|---:|---:|");
  for (const b of best) lines.push(`| ${b.cls} | ${b.ours ?? "–"} | ${f(b.ours_tok_s)} | ${f(b.ours_vs_plain)}x | ${b.theirs ?? "–"} | ${f(b.theirs_tok_s)} | ` +
    `${f(b.theirs_vs_plain)}x | **${f(b.ratio)}x** | ${pct(b.loop_ours_plain)} / ${pct(b.loop_theirs_plain)} |`);
  const failed = order.filter((c) => c.error);
  if (failed.length) { lines.push(""); for (const c of failed) lines.push(`failed: ${c.engine} ${cellName(c)}: ${c.error.split("\n").slice(-3).join(" ").slice(0, 300)}`); }
  const md = lines.join("\n") + "\n";
  if (done === ROUNDS) console.log(md);
  if (opt["out-md"]) fs.writeFileSync(opt["out-md"], md);
  if (opt.json) fs.writeFileSync(opt.json, JSON.stringify({ model: opt.m, draft: opt.md ?? null, eagle3: opt.eagle3 ?? null, has_mtp: HAS_MTP,
    n: N, threads: T, rounds: ROUNDS, rounds_done: done, ctx: CTX, free_temp: FREE_T, seeds: SEEDS, load_start: load0, load_end: os.loadavg(),
    items: its.map((x) => ({ cls: x.cls, name: x.name, temp: x.temp, seed: x.seed })), rows, best,
    cells: order.map((c) => ({ engine: c.engine, cell: cellName(c), cmd: c.cmd, error: c.error })),
    samples: samples.map((s) => ({ cell: cellName(order[s.ci]), engine: order[s.ci].engine, round: s.round,
      res: s.res.map((x) => ({ n: x.n, ms: x.ms, drafted: x.drafted, accepted: x.accepted, rounds: x.rounds, loop: x.loop, text: x.text })) })) }, null, 1) + "\n");
}

main().catch((e) => { console.error(`race: ${e.stack ?? e}`); process.exit(1); });
