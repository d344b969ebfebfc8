#!/usr/bin/env node
// Does llama.cpp's loader (node-llama-cpp's prebuilt build) accept a GGUF?
//   node load_check.mjs FILE.gguf
// Prints "loaded" or the loader's error lines (its log at debug level is
// filtered to the lines that say why), exit 0 / 1. Loading is all it checks:
// an EAGLE-3 head cannot get a context here (llama.cpp runs it only beside
// its target's context, which node-llama-cpp has no API for).
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const file = process.argv[2];
if (!file) {
  console.error("usage: node load_check.mjs FILE.gguf");
  process.exit(2);
}
const lines = [];
const llama = await getLlama({
  gpu: false, build: "never", logLevel: LlamaLogLevel.debug,
  logger: (level, msg) => lines.push(msg.trimEnd()),
});
let ok = true;
try {
  const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
  await model.dispose();
} catch (e) {
  ok = false;
  lines.push(String(e && e.message || e));
}
for (const l of lines)
  if (/error|fail|wrong|missing|tensor '|EAGLE3|eagle3/i.test(l)) console.log(l);
console.log(ok ? "loaded" : "not loaded");
await llama.dispose();
process.exit(ok ? 0 : 1);
