// llama.cpp's prompt and decode rates on a GGUF, measured as llama-bench measures them (-p P -n N):
// a warm-up token; a P-token prompt in one batch from an empty context; N single-token decode
// steps from an empty context; no sampling. For `make bench`, beside `pccx bench --ref -m` on
// the same file (scripts/bench.sh).
// Usage: node scripts/llamacpp-bench.mjs PREFIX MODEL.gguf P N THREADS
//   PREFIX: where scripts/fetch-llamacpp.sh installed node-llama-cpp
// Prints: "llama.cpp RELEASE: ppP X tok/s, tgN Y tok/s, T threads".
import { pathToFileURL } from "node:url";

const [prefix, model, pStr, nStr, tStr] = process.argv.slice(2);
const p = Number(pStr), n = Number(nStr), threads = Number(tStr);
if (!prefix || !model || !(p > 0) || !(n > 0) || !(threads > 0)) {
  console.error("usage: node llamacpp-bench.mjs PREFIX MODEL.gguf P N THREADS");
  process.exit(2);
}
const { getLlama } = await import(
  pathToFileURL(`${prefix}/node_modules/node-llama-cpp/dist/index.js`).href);
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const m = await llama.loadModel({ modelPath: model, gpuLayers: 0 });
const ctx = await m.createContext({ contextSize: 2 * (p + n + 1), batchSize: p, threads,
  sequences: 1 });
const seq = ctx.getSequence();
// token ids from the middle of the vocabulary: any ids do, no text is made
const ids = (count, base) => Array.from({ length: count }, (_, i) => base + i);

await seq.evaluateWithoutGeneratingNewTokens(ids(1, 1000));
await seq.clearHistory();
let t = performance.now();
await seq.evaluateWithoutGeneratingNewTokens(ids(p, 1000));
const pp = p / ((performance.now() - t) / 1000);
await seq.clearHistory();
t = performance.now();
for (let i = 0; i < n; i++)
  await seq.evaluateWithoutGeneratingNewTokens(ids(1, 2000 + i));
const tg = n / ((performance.now() - t) / 1000);
console.log(`llama.cpp ${llama.llamaCppRelease.release}: pp${p} ${pp.toFixed(2)} tok/s, ` +
  `tg${n} ${tg.toFixed(2)} tok/s, ${threads} threads`);
await ctx.dispose();
await m.dispose();
await llama.dispose();
