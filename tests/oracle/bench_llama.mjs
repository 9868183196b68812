// bench_llama.mjs - llama.cpp v0.5.0 (node-llama-cpp 3.22.1, CPU prebuilt) timed the way
// llama-bench times: a prompt-processing test (n_prompt synthetic tokens in one batch, fresh
// context) and a generation test (n_gen tokens decoded one at a time from an empty context),
// after one warm-up, repeated -r times. Rates come from llama.cpp's own llama_perf counters
// (prompt eval / eval time), which exclude Node's overhead: the fair number for llama.cpp.
// Prints a JSON array shaped like `g4 bench -o json`. Run it as a file.
//   node tests/oracle/bench_llama.mjs -m MODEL [-t 1,2] [-p 256] [-n 64] [-r 3]
import process from "node:process";
import {loadLlama} from "./llama_load.mjs";

const a = {model: null, threads: [1], p: 256, n: 64, r: 3};
for (let i = 2; i < process.argv.length; i++) {
    const k = process.argv[i], v = process.argv[i + 1];
    if (k === "-m") { a.model = v; i++; }
    else if (k === "-t") { a.threads = v.split(",").map(Number); i++; }
    else if (k === "-p") { a.p = Number(v); i++; }
    else if (k === "-n") { a.n = Number(v); i++; }
    else if (k === "-r") { a.r = Number(v); i++; }
    else { console.error("bench_llama: unknown argument " + k); process.exit(2); }
}
if (!a.model) { console.error("bench_llama: -m MODEL is required"); process.exit(2); }
const perf = [];
const {llama, cpuBackend} = await loadLlama({maxThreads: 0, logLevel: "info",
    logger(level, msg) { if (/eval time/.test(msg)) perf.push(msg.trim()); }});
const model = await llama.loadModel({modelPath: a.model, gpuLayers: 0});
const nVocab = model.tokens?.trainedVocabularySize ?? 262144;
let seed = 1;
const rnd = () => { seed = (seed * 1103515245 + 12345) >>> 0; return 16 + (seed >>> 8) % (nVocab - 16); };

function parsePerf(kind) { // "prompt eval time =  123.45 ms /   256 tokens" or "eval time = ... / 63 runs"
    const re = kind === "pp" ? /prompt eval time\s*=\s*([\d.]+) ms\s*\/\s*(\d+)/ : /^(?:llama_perf_context_print:\s*)?eval time\s*=\s*([\d.]+) ms\s*\/\s*(\d+)/;
    for (const l of perf) {
        const m = l.replace(/^.*?(prompt eval time|eval time)/, "$1").match(re);
        if (m && Number(m[2]) > 0) return Number(m[2]) / (Number(m[1]) / 1000);
    }
    return null;
}

async function once(threads, kind) {
    const n = kind === "pp" ? a.p : a.n;
    const ctx = await model.createContext({contextSize: Math.max(512, a.p + a.n + 8), batchSize: Math.max(512, a.p),
        sequences: 1, threads: {ideal: threads, min: threads}, flashAttention: false, performanceTracking: true,
        ignoreMemorySafetyChecks: true, failedCreationRemedy: false});
    const seq = ctx.getSequence();
    const t0 = process.hrtime.bigint();
    if (kind === "pp") {
        const toks = Array.from({length: n}, rnd);
        await seq.controlledEvaluate(toks.map((t, i) => i < n - 1 ? t : [t, {generateNext: {token: true}}]));
    } else {
        let t = rnd();
        for (let i = 0; i < n; i++) {
            const o = await seq.controlledEvaluate([[t, {generateNext: {token: true}}]]);
            t = o[0].next.token ?? rnd();
        }
    }
    const wall = n / (Number(process.hrtime.bigint() - t0) / 1e9);
    perf.length = 0;
    await ctx.printTimings();
    const ts = parsePerf(kind) ?? wall;
    await ctx.dispose();
    return ts;
}

const out = [];
for (const t of a.threads) {
    for (const kind of ["pp", "tg"]) {
        if ((kind === "pp" && a.p <= 0) || (kind === "tg" && a.n <= 0)) continue;
        await once(t, kind); // warm-up
        const s = [];
        for (let r = 0; r < a.r; r++) s.push(await once(t, kind));
        const avg = s.reduce((x, y) => x + y, 0) / s.length;
        const sd = Math.sqrt(s.reduce((x, y) => x + (y - avg) ** 2, 0) / Math.max(1, s.length - 1));
        out.push({engine: "llama.cpp v0.5.0 npm prebuilt", cpu_backend: cpuBackend, n_prompt: kind === "pp" ? a.p : 0, n_gen: kind === "tg" ? a.n : 0,
            n_threads: t, avg_ts: avg, stddev_ts: sd, samples_ts: s});
    }
}
console.log(JSON.stringify(out));
await model.dispose();
await llama.dispose();
