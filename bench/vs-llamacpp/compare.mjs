#!/usr/bin/env node
// Joins the JSON of `specdec bench` (ours) and llamacpp_bench.mjs (llama.cpp)
// from alternating rounds of one run.sh invocation into one ratio table
// (ours / llama.cpp, medians over rounds) and one JSON document.
//   node compare.mjs --out race.json ours-1.json ... -- llama-1.json ...
import fs from "node:fs";
import { median, expectedAccepted } from "./lib.mjs";

const args = process.argv.slice(2);
let out = null;
if (args[0] === "--out") { out = args[1]; args.splice(0, 2); }
const sep = args.indexOf("--");
const ours = args.slice(0, sep).map((f) => JSON.parse(fs.readFileSync(f, "utf8")));
const theirs = args.slice(sep + 1).map((f) => JSON.parse(fs.readFileSync(f, "utf8")));
if (!ours.length || !theirs.length) {
  console.error("usage: node compare.mjs [--out FILE] OURS.json... -- LLAMA.json...");
  process.exit(2);
}

const med = (xs) => median(xs.filter((x) => x != null));
const fmt = (x, d = 2) => (x == null || !Number.isFinite(x) ? "–" : x.toFixed(d));
const ratio = (a, b) => (a != null && b != null && b > 0 ? a / b : null);

const rows = [];
const addRow = (what, o, l, unit) => rows.push({ what, ours: o, llama_cpp: l, ratio: ratio(o, l), unit });

// ---- per prompt: prefill, greedy decode, n-gram and draft-model speculative ----
const prompts = ours[0].classes?.map((c) => c.prompt) ?? [];
const perPrompt = [];
for (const name of prompts) {
  const o = ours.map((j) => j.classes.find((c) => c.prompt === name));
  const l = theirs.map((j) => j.prompts.find((p) => p.name === name));
  if (l.some((x) => !x)) continue;
  const rec = {
    prompt: name, class: o[0].class, n_prompt_ours: o[0].n_prompt, n_prompt_llama_cpp: l[0].n_prompt,
    prefill: [med(o.map((x) => x.prefill_tok_s)), med(l.map((x) => x.modes.greedy.prefill_tok_s))],
    greedy: [med(o.map((x) => x.greedy_tok_s)), med(l.map((x) => x.modes.greedy.decode_tok_s))],
  };
  for (const m of ["ngram", "draft"]) {
    if (o[0].drafters[m] && l[0].modes[m]) {
      rec[m] = [med(o.map((x) => x.drafters[m].spec_tok_s)), med(l.map((x) => x.modes[m].decode_tok_s))];
      rec[m + "_speedup"] = [med(o.map((x) => x.drafters[m].speedup)), med(l.map((x) => x.modes[m].speedup))];
      rec[m + "_alpha"] = [o[0].drafters[m].alpha, l[0].modes[m].alpha];
      rec[m + "_lossless"] = [o.map((x) => `${x.drafters[m].lossless_ok}/${x.drafters[m].lossless_n}`).join(" "),
        l.map((x) => x.modes[m].lossless).join(" ")];
    }
  }
  perPrompt.push(rec);
}
const all = (key) => [med(perPrompt.map((r) => r[key]?.[0])), med(perPrompt.map((r) => r[key]?.[1]))];
if (perPrompt.length) {
  addRow("prefill tok/s (median over prompts)", ...all("prefill"), "tok/s");
  addRow("greedy decode tok/s (median over prompts)", ...all("greedy"), "tok/s");
  if (perPrompt[0].ngram) addRow("n-gram spec tok/s (median over prompts)", ...all("ngram"), "tok/s");
  if (perPrompt[0].draft) addRow("draft-model spec tok/s (median over prompts)", ...all("draft"), "tok/s");
}

// ---- roofline: both engines against the same weight bytes and bandwidth ----
const cvO = ours.map((j) => j.cv).filter(Boolean);
let roofline = null;
if (cvO.length && perPrompt.length) {
  const floor = med(cvO.map((c) => c.roofline.floor_ms));
  const [g0, g1] = all("greedy");
  roofline = { weight_bytes: cvO[0].roofline.weight_bytes, read_gbs: med(cvO.map((c) => c.roofline.read_gbs)), floor_ms: floor,
    ours_ms: 1e3 / g0, llama_cpp_ms: 1e3 / g1, ours_fraction: floor / (1e3 / g0), llama_cpp_fraction: floor / (1e3 / g1) };
  addRow("roofline fraction (floor ms / decode ms)", roofline.ours_fraction, roofline.llama_cpp_fraction, "");
}

// ---- synthetic acceptance (oracle drafter / oracle predictor) ----
const oracle = [];
const t0 = theirs[0];
if (ours[0].oracle && theirs[0].oracle) {
  for (const row of ours[0].oracle.rows) {
    const a = row.alpha;
    const o = ours.map((j) => j.oracle.rows.find((r) => r.alpha === a));
    const l = theirs.map((j) => j.oracle.alphas.find((r) => r.alpha === a)).filter(Boolean);
    if (!l.length) continue;
    const rec = { alpha: a, spec_tok_s: [med(o.map((x) => x.spec_tok_s)), med(l.map((x) => x.decode_tok_s))],
      speedup: [med(o.map((x) => x.measured_speedup)), med(l.map((x) => x.speedup))],
      predicted_ours: row.predicted_speedup, accepted_per_round: [row.accepted_per_round, l[0].accepted_per_round],
      expected_accepted_per_round: expectedAccepted(a, ours[0].oracle.K ?? t0.k),
      lossless: [o.map((x) => `${x.lossless_ok}/${x.lossless_n}`).join(" "), l.map((x) => x.lossless).join(" ")] };
    oracle.push(rec);
    addRow(`oracle α=${a} spec tok/s`, ...rec.spec_tok_s, "tok/s");
    addRow(`oracle α=${a} speedup over own greedy`, ...rec.speedup, "×");
  }
}

// ---- c_v(S) ----
const cv = [];
const cvL = theirs.map((j) => j.cv).filter(Boolean);
if (cvO.length && cvL.length) {
  for (let S = 1; S <= 17; S++) {
    const o = med(cvO.map((c) => c.curve[S - 1]?.c_v)), l = med(cvL.map((c) => c[S - 1]?.c_v));
    const om = med(cvO.map((c) => c.curve[S - 1]?.ms)), lm = med(cvL.map((c) => c[S - 1]?.ms));
    cv.push({ S, c_v: [o, l], ms: [om, lm] });
  }
}

// ---- print ----
const t = theirs[0];
console.log(`# specdec vs llama.cpp — ${ours[0].target}${ours[0].draft ? ` (draft ${ours[0].draft})` : ""}`);
console.log(`\n${ours[0].threads} threads, n = ${ours[0].n_predict}, ${ours.length} alternating rounds per engine; ` +
  `llama.cpp ${t.llama_cpp_release?.release} via node-llama-cpp ${t.node_llama_cpp} (${t.system_info.trim()}); ` +
  `llama.cpp's speculative loop: ${t.spec_loop === "node-llama-cpp" ? "node-llama-cpp's token predictors (accepts at most 1 draft per round)" : "bench/vs-llamacpp/spec.mjs (batched verify + KV rollback)"}\n`);
console.log("| measure | specdec | llama.cpp | ours / llama.cpp |\n|---|---:|---:|---:|");
for (const r of rows) console.log(`| ${r.what} | ${fmt(r.ours)} | ${fmt(r.llama_cpp)} | ${fmt(r.ratio)} |`);
if (perPrompt.length) {
  console.log("\n| prompt | class | n_prompt (ours/llama) | greedy tok/s ours | llama | ratio | ngram speedup ours | llama | ngram α ours | llama | LOSSLESS ours | llama |");
  console.log("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|");
  for (const r of perPrompt)
    console.log(`| ${r.prompt} | ${r.class} | ${r.n_prompt_ours}/${r.n_prompt_llama_cpp} | ${fmt(r.greedy[0])} | ${fmt(r.greedy[1])} | ${fmt(ratio(...r.greedy))} | ` +
      `${fmt(r.ngram_speedup?.[0])} | ${fmt(r.ngram_speedup?.[1])} | ${fmt(r.ngram_alpha?.[0], 3)} | ${fmt(r.ngram_alpha?.[1], 3)} | ${r.ngram_lossless?.[0] ?? "–"} | ${r.ngram_lossless?.[1] ?? "–"} |`);
}
if (oracle.length) {
  console.log("\n| oracle α | spec tok/s ours | llama | speedup ours | llama | predicted (ours, E/c_v) | accepted/round ours | llama | model α(1−α^K)/(1−α) | LOSSLESS ours | llama |");
  console.log("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|");
  for (const r of oracle)
    console.log(`| ${r.alpha} | ${fmt(r.spec_tok_s[0])} | ${fmt(r.spec_tok_s[1])} | ${fmt(r.speedup[0])} | ${fmt(r.speedup[1])} | ${fmt(r.predicted_ours)} | ` +
      `${fmt(r.accepted_per_round[0])} | ${fmt(r.accepted_per_round[1])} | ${fmt(r.expected_accepted_per_round)} | ${r.lossless[0]} | ${r.lossless[1]} |`);
}
if (cv.length) {
  console.log("\n| S | " + cv.map((c) => c.S).join(" | ") + " |\n|---|" + cv.map(() => "---:").join("|") + "|");
  console.log("| c_v ours | " + cv.map((c) => fmt(c.c_v[0])).join(" | ") + " |");
  console.log("| c_v llama.cpp | " + cv.map((c) => fmt(c.c_v[1])).join(" | ") + " |");
  console.log("| ms ours | " + cv.map((c) => fmt(c.ms[0])).join(" | ") + " |");
  console.log("| ms llama.cpp | " + cv.map((c) => fmt(c.ms[1])).join(" | ") + " |");
}
if (roofline)
  console.log(`\nroofline: ${(roofline.weight_bytes / 1e6).toFixed(1)} MB/token at ${roofline.read_gbs.toFixed(1)} GB/s = ${roofline.floor_ms.toFixed(2)} ms floor; ` +
    `ours ${roofline.ours_ms.toFixed(2)} ms/token (${(100 * roofline.ours_fraction).toFixed(0)}%), llama.cpp ${roofline.llama_cpp_ms.toFixed(2)} ms/token (${(100 * roofline.llama_cpp_fraction).toFixed(0)}%)`);

const doc = { target: ours[0].target, draft: ours[0].draft, threads: ours[0].threads, n_predict: ours[0].n_predict,
  rounds: ours.length, llama_cpp: { release: t.llama_cpp_release, node_llama_cpp: t.node_llama_cpp, system_info: t.system_info, spec_loop: t.spec_loop },
  summary: rows, prompts: perPrompt, oracle, cv, roofline };
if (out) fs.writeFileSync(out, JSON.stringify(doc, null, 1) + "\n");
