// ppl_llama.mjs - llama-perplexity's measurement done with llama.cpp v0.5.0 (node-llama-cpp
// 3.22.1, CPU prebuilt), for tests/sh/perplexity.sh: the same text through llama.cpp's own
// tokenizer and forward pass, cut and scored as tools/perplexity/perplexity.cpp does (BOS
// prepended to the whole text, floor(n/c) chunks, each from an empty cache with BOS as its
// first token, the logits at positions c/2 .. c-2 score the next tokens; log-softmax with a
// float max and a double sum of expf). Prints llama-perplexity's lines:
//   [1]x,[2]y,...
//   Final estimate: PPL = x +/- y
// KV cache F32 and flash attention off (oracle.md §5), exact thread count. Run it as a file.
// $G4_ORACLE_MODULES selects a pinned CPU variant (tests/oracle/llama_load.mjs).
//   node tests/oracle/ppl_llama.mjs -m MODEL -f TEXT [-c 512] [--chunks N] [-t 1]
import fs from "node:fs";
import process from "node:process";
import {loadLlama} from "./llama_load.mjs";

const a = {model: null, file: null, c: 512, chunks: -1, threads: 1};
for (let i = 2; i < process.argv.length; i++) {
    const k = process.argv[i], v = process.argv[i + 1];
    if (k === "-m") { a.model = v; i++; }
    else if (k === "-f") { a.file = v; i++; }
    else if (k === "-c") { a.c = Number(v); i++; }
    else if (k === "--chunks") { a.chunks = Number(v); i++; }
    else if (k === "-t") { a.threads = Number(v); i++; }
    else { console.error("ppl_llama: unknown argument " + k); process.exit(2); }
}
if (!a.model || !a.file) { console.error("ppl_llama: -m MODEL and -f TEXT are required"); process.exit(2); }
const {llama} = await loadLlama({maxThreads: 0, logger() {}}); // stderr: the CPU library llama.cpp loaded
const model = await llama.loadModel({modelPath: a.model, gpuLayers: 0});
const text = fs.readFileSync(a.file, "utf8");
let tokens = Array.from(model.tokenize(text, false));
const bos = model.tokens.bos;
if (bos != null && model.tokens.shouldPrependBosToken) tokens = [bos, ...tokens];
const c = a.c, first = Math.floor(c / 2);
if (tokens.length < 2 * c) { console.error(`ppl_llama: ${tokens.length} tokens, need ${2 * c}`); process.exit(1); }
let nChunk = Math.floor(tokens.length / c);
if (a.chunks > 0) nChunk = Math.min(nChunk, a.chunks);
const ctx = await model.createContext({contextSize: c, batchSize: c, sequences: 1,
    threads: {ideal: a.threads, min: a.threads}, flashAttention: false,
    experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
    ignoreMemorySafetyChecks: true, failedCreationRemedy: false});
const f32 = x => Math.fround(x);
let nll = 0, nll2 = 0, count = 0, line = "";
for (let i = 0; i < nChunk; i++) {
    const chunk = tokens.slice(i * c, (i + 1) * c);
    if (bos != null) chunk[0] = bos;
    const seq = ctx.getSequence();
    const items = chunk.map((t, j) => j >= first && j < c - 1 ? [t, {generateNext: {logits: true}}] : t);
    const outs = await seq.controlledEvaluate(items);
    for (let j = first; j < c - 1; j++) {
        const lg = outs[j].next.logits; // Map id -> logit
        let mx = -Infinity;
        for (const v of lg.values()) if (v > mx) mx = v;
        let s = 0;
        for (const v of lg.values()) s += f32(Math.exp(f32(v - mx)));
        const tgt = tokens[i * c + j + 1];
        const lp = f32(lg.get(tgt) - mx) - Math.log(s);
        nll += -lp; nll2 += lp * lp; count++;
    }
    await seq.dispose();
    line += `[${i + 1}]${Math.exp(nll / count).toFixed(4)},`;
}
const mean = nll / count, ppl = Math.exp(mean);
let v = nll2 / count - mean * mean;
const err = v > 0 ? Math.sqrt(v / (count - 1)) * ppl : 0;
console.log(line);
console.log(`Final estimate: PPL = ${ppl.toFixed(4)} +/- ${err.toFixed(5)}`);
await ctx.dispose();
await model.dispose();
await llama.dispose();
