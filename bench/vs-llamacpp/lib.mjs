// Shared pieces of the llama.cpp side of the race: loading llama.cpp through
// node-llama-cpp's prebuilt CPU binaries (never a source build, never a
// download), tokenizing the way its completion API does, prompt files, the
// synthetic-acceptance oracle drafts, and small statistics helpers.
import fs from "node:fs";
import path from "node:path";
import { getLlama, LlamaLogLevel, TokenPredictor } from "node-llama-cpp";

// build: "never" makes getLlama throw instead of compiling llama.cpp when no
// prebuilt binary fits; usePrebuiltBinaries uses the @node-llama-cpp/linux-x64
// npm package installed next to us. gpu: false keeps it on the CPU.
export async function loadLlama(threads) {
  return getLlama({
    gpu: false,
    build: "never",
    usePrebuiltBinaries: true,
    progressLogs: false,
    logLevel: LlamaLogLevel.error,
    maxThreads: threads,
  });
}

export function nowS() {
  return Number(process.hrtime.bigint()) / 1e9;
}

export function median(xs) {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return null;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// node-llama-cpp's model.tokenize adds no BOS (ARCHITECTURE.md §10); its completion
// API prepends one when the model asks for it, so do the same.
export function tokenizePrompt(model, text) {
  const ids = model.tokenize(text, false);
  const bos = model.tokens.bos;
  if (model.tokens.shouldPrependBosToken && bos != null) return [bos, ...ids];
  return ids;
}

// Prompt files: bench/prompts/*.txt. The class comes from a first line
// "class: NAME" (removed from the text), else from the file name prefix
// (code-*.txt, rag-*.txt, free-*.txt, repeat-*.txt).
export function loadPrompts(dir) {
  const files = fs.readdirSync(dir).filter((f) => f.endsWith(".txt")).sort();
  return files.map((f) => {
    let text = fs.readFileSync(path.join(dir, f), "utf8");
    let cls = f.split(/[-_.]/)[0];
    const m = text.match(/^class:\s*(\S+)[ \t]*\r?\n/);
    if (m) {
      cls = m[1];
      text = text.slice(m[0].length);
    }
    return { name: f.replace(/\.txt$/, ""), cls, text };
  });
}

// Synthetic acceptance, the twin of our src/decode/drafter_oracle.c: the
// draft for reference position j (0 = the first generated token) is the
// target's own greedy token ref[j], replaced by a different id with
// probability 1 - alpha. The corruption is a function of (seed, j) only, so
// it does not depend on how the engine cuts its rounds: with splitmix64
// (Steele, Lea, Flood 2014) draw number m = mix(seed + m * GAMMA), position j
// uses draws 2j + 1 (keep if u < alpha) and 2j + 2 (which wrong id).
const M64 = (1n << 64n) - 1n, GAMMA = 0x9e3779b97f4a7c15n;
function splitmix64(seed, m) {
  let z = (BigInt(seed) + BigInt(m) * GAMMA) & M64;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M64;
  return z ^ (z >> 31n);
}

export function oracleDraft(ref, j, alpha, seed, nVocab) {
  const u = Number(splitmix64(seed, 2 * j + 1) >> 11n) * 2 ** -53;
  if (u < alpha) return ref[j];
  const shift = 1n + (splitmix64(seed, 2 * j + 2) % BigInt(nVocab - 1));
  return Number((BigInt(ref[j]) + shift) % BigInt(nVocab));
}

// The drafts for every reference position, computed once per (alpha, seed).
export function oracleDrafts(ref, alpha, seed, nVocab) {
  return ref.map((_, j) => oracleDraft(ref, j, alpha, seed, nVocab));
}

// The oracle as a node-llama-cpp TokenPredictor, for `--spec-loop
// node-llama-cpp` only (see spec.mjs for why that loop is not the race).
// node-llama-cpp calls reset() with the state holding every token already in
// or about to enter the KV cache (the prompt, including its last token, which
// is evaluated together with the predictions), pushTokens() with each token
// it yields, and predictTokens() when it has no validated predictions left:
// the predictions continue past the last state token, at reference index
// stateLen - nPrompt.
export class OraclePredictor extends TokenPredictor {
  constructor({ drafts, nPrompt, k }) {
    super();
    Object.assign(this, { drafts, nPrompt, k });
    this.stateLen = 0;
    this.rounds = 0;
    this.proposed = 0;
  }
  reset({ stateTokens }) {
    this.stateLen = stateTokens.length;
  }
  pushTokens(tokens) {
    this.stateLen += tokens.length;
  }
  predictTokens() {
    const g = this.stateLen - this.nPrompt;
    const out = g >= 0 ? this.drafts.slice(g, g + this.k) : [];
    if (out.length > 0) this.rounds++;
    this.proposed += out.length;
    return out;
  }
}

// E[accepted drafts per round] when each draft is right with probability
// alpha independently and a round stops at the first wrong one:
// alpha + ... + alpha^k (ARCHITECTURE.md §2, minus the always-correct a0).
export function expectedAccepted(alpha, k) {
  let s = 0;
  for (let i = 1, p = alpha; i <= k; i++, p *= alpha) s += p;
  return s;
}

// The alpha whose expectedAccepted(alpha, k) is accPerRound: the same fit as
// our bench_alpha_geo (src/cli/bench_run.c).
export function alphaGeo(accPerRound, k) {
  if (!(accPerRound > 0)) return 0;
  if (accPerRound >= k) return 1;
  let lo = 0, hi = 1;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (expectedAccepted(mid, k) < accPerRound) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

// Rows of token_embd.weight (GGUF ne[1]): the vocabulary size the model scores.
export function vocabSize(model) {
  const info = model.fileInfo.fullTensorInfo ?? model.fileInfo.tensorInfo ?? [];
  const t = info.find((x) => x.name === "token_embd.weight");
  if (!t) throw new Error("token_embd.weight not found");
  return Number(t.dimensions[1]);
}
