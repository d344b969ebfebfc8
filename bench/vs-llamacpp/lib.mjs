// Shared pieces of the llama.cpp side of the race: loading llama.cpp through
// node-llama-cpp's prebuilt CPU binaries (never a source build, never a
// download), tokenizing the way its completion API does, prompt files, the
// synthetic-acceptance oracle predictor, and small statistics helpers.
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

// node-llama-cpp's model.tokenize adds no BOS (DESIGN.md §10); its completion
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

// A seeded generator (mulberry32), so a given seed corrupts the same drafts.
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Synthetic acceptance on llama.cpp's side, the twin of our
// src/decode/drafter_oracle.c: proposes the target's own greedy continuation
// (from a plain greedy run), each token replaced by a different one with
// probability 1 - alpha. node-llama-cpp calls predictTokens() with the state
// holding every committed token including the one about to be evaluated (a0),
// so the proposal continues past a0, as in DESIGN.md §1.
export class OraclePredictor extends TokenPredictor {
  constructor({ greedy, nPrompt, alpha, k, seed, nVocab }) {
    super();
    Object.assign(this, { greedy, nPrompt, alpha, k, nVocab });
    this.random = rng(seed);
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
    const g = this.stateLen - this.nPrompt;  // generated tokens so far, a0 included
    const out = [];
    for (let i = 0; i < this.k && g + i < this.greedy.length; i++) {
      let t = this.greedy[g + i];
      if (this.random() >= this.alpha) t = (t + 1 + Math.floor(this.random() * (this.nVocab - 1))) % this.nVocab;
      out.push(t);
    }
    if (out.length > 0) this.rounds++;
    this.proposed += out.length;
    return out;
  }
}

// Rows of token_embd.weight (GGUF ne[1]): the vocabulary size the model scores.
export function vocabSize(model) {
  const info = model.fileInfo.fullTensorInfo ?? model.fileInfo.tensorInfo ?? [];
  const t = info.find((x) => x.name === "token_embd.weight");
  if (!t) throw new Error("token_embd.weight not found");
  return Number(t.dimensions[1]);
}
