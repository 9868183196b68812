// oracle.mjs - llama.cpp v0.5.0 (node-llama-cpp 3.22.1, CPU prebuilt) as a test oracle for
// gemma4.c, with output that C and shell read trivially. Run it from a script file (never
// `node -e`: node-llama-cpp's binary self-test re-spawns node with the parent's execArgv).
//
//   node tests/oracle/oracle.mjs run -m M.gguf --ids 2,17,33 -n 16 \
//        [--kv f32|f16|q8_0] [--fa off|on] [-t 1] [-c N] [-b N] \
//        [--ids-out FILE] [--logits-out FILE] [--margins-out FILE]
//     Evaluates the prompt ids exactly as given (no BOS added) in one llama_decode (or in
//     batches of -b), then decodes greedily for n steps, one token per llama_decode.
//     stdout: the n greedy ids as one comma-separated line (same as `g4 run --ids`).
//     --logits-out: the last prompt position's logits (after the final soft-cap) as
//     n_vocab little-endian float32 (same as `g4 run --dump-logits`).
//     Greedy = lowest id among the maximal logits (our own argmax, like g4's sampler).
//     --margins-out: one line per greedy step, "<id> <top1 - top2 logit>": how close the
//     step was to a tie (a near-tie may legitimately go either way under rounding noise).
//
//   node tests/oracle/oracle.mjs batch JOBS
//     One `run` per line of the file JOBS (its arguments, space-separated, without "run"),
//     all in one process (llama.cpp is initialised once); each job should name its outputs
//     with --ids-out / --logits-out / --margins-out. A failing job writes its message to
//     stderr and the batch goes on; exit status 1 if any job failed.
//
//   node tests/oracle/oracle.mjs cmp A.f32 B.f32 [--topk 10]
//     Compares two raw float32 logit files: prints one line
//       nmse=<x> maxabs=<x> argmax_a=<i> argmax_b=<i> top<k>_overlap=<n>
//     NMSE = sum((a-b)^2) / sum(a^2), with A the reference.
//
// Defaults are the tight-comparison settings of shared/docs/oracle.md §5: flash attention
// off, exact thread count (1), one sequence, F32 KV cache unless --kv says otherwise.
// The packages come from $G4_ORACLE_MODULES when set (a pinned CPU variant, see
// tests/oracle/llama_load.mjs); stderr gets "oracle: llama.cpp CPU backend <library>".
import fs from "node:fs";
import process from "node:process";
import {loadLlama} from "./llama_load.mjs";

function die(msg) { process.stderr.write("oracle: " + msg + "\n"); process.exit(2); }

function parseRun(argv) {
    const a = {model: null, ids: null, n: 16, kv: "F32", fa: "off", threads: 1, ctx: 0, batch: 0,
        idsOut: null, logitsOut: null, marginsOut: null, verbose: false};
    for (let i = 0; i < argv.length; i++) {
        const k = argv[i];
        const v = () => { if (i + 1 >= argv.length) die("missing value for " + k); return argv[++i]; };
        switch (k) {
            case "-m": case "--model": a.model = v(); break;
            case "--ids": a.ids = v().split(",").filter(s => s.length).map(s => {
                const x = Number(s); if (!Number.isInteger(x) || x < 0) die("bad id " + s); return x; }); break;
            case "-n": a.n = Number(v()); break;
            case "--kv": a.kv = v().toUpperCase(); break;
            case "--fa": a.fa = v(); break;
            case "-t": a.threads = Number(v()); break;
            case "-c": a.ctx = Number(v()); break;
            case "-b": a.batch = Number(v()); break;
            case "--ids-out": a.idsOut = v(); break;
            case "--logits-out": a.logitsOut = v(); break;
            case "--margins-out": a.marginsOut = v(); break;
            case "-v": a.verbose = true; break;
            default: die("unknown argument " + k);
        }
    }
    if (!a.model) die("-m MODEL is required");
    if (!a.ids || a.ids.length === 0) die("--ids is required");
    if (!Number.isInteger(a.n) || a.n < 0) die("bad -n");
    return a;
}

function argmax(arr) {
    let best = 0, bv = -Infinity;
    for (let i = 0; i < arr.length; i++) if (arr[i] > bv) { bv = arr[i]; best = i; }
    return best;
}

function margin(arr) { // top1 - top2
    let b1 = -Infinity, b2 = -Infinity;
    for (const x of arr) { if (x > b1) { b2 = b1; b1 = x; } else if (x > b2) b2 = x; }
    return b1 - b2;
}

function dense(map, nVocab) {
    const out = new Float32Array(nVocab).fill(NaN);
    for (const [tok, val] of map) if (tok >= 0 && tok < nVocab) out[tok] = val;
    return out;
}

async function initLlama(verbose) {
    try { return (await loadLlama({verbose, maxThreads: 0})).llama; } // 0 = no cap; the context sets the count
    catch (e) { die(e.message); }
}

async function run(argv, llamaIn) {
    const a = parseRun(argv);
    const llama = llamaIn ?? await initLlama(a.verbose);
    const model = await llama.loadModel({modelPath: a.model, gpuLayers: 0});
    const tinfo = model.fileInfo.tensorInfo ?? [];
    const head = tinfo.find(t => t.name === "output.weight") ?? tinfo.find(t => t.name === "token_embd.weight");
    const nVocab = Number(head?.dimensions?.[1] ?? 0);
    if (!(nVocab > 0)) throw new Error("cannot find the vocabulary size");
    for (const t of a.ids) if (t >= nVocab) throw new Error("id " + t + " >= n_vocab " + nVocab);

    const need = a.ids.length + a.n;
    const ctxSize = a.ctx || Math.max(need, 64);
    const ctx = await model.createContext({
        contextSize: ctxSize, batchSize: a.batch || ctxSize, sequences: 1,
        threads: {ideal: a.threads, min: a.threads},
        flashAttention: a.fa === "on" ? true : a.fa === "off" ? false : "auto",
        experimentalKvCacheKeyType: a.kv, experimentalKvCacheValueType: a.kv,
        ignoreMemorySafetyChecks: true, failedCreationRemedy: false,
    });
    const seq = ctx.getSequence();
    const greedy = {temperature: 0};
    const items = a.ids.map((t, i) => i < a.ids.length - 1 ? t
        : [t, {generateNext: {logits: true, token: true, options: greedy}}]);
    const outs = await seq.controlledEvaluate(items);
    const last = dense(outs[a.ids.length - 1].next.logits, nVocab);
    if (a.logitsOut) fs.writeFileSync(a.logitsOut, Buffer.from(last.buffer, last.byteOffset, last.byteLength));
    const gen = [], margins = [];
    let next = argmax(last), mg = margin(last);
    for (let k = 0; k < a.n; k++) {
        gen.push(next);
        margins.push(next + " " + mg);
        if (k === a.n - 1) break;
        const o = await seq.controlledEvaluate([[next, {generateNext: {logits: true, token: true, options: greedy}}]]);
        const d = dense(o[0].next.logits, nVocab);
        next = argmax(d);
        mg = margin(d);
    }
    if (a.marginsOut) fs.writeFileSync(a.marginsOut, margins.join("\n") + "\n");
    const line = gen.join(",");
    if (a.idsOut) fs.writeFileSync(a.idsOut, line + "\n");
    if (!llamaIn) process.stdout.write(line + "\n");
    await ctx.dispose();
    await model.dispose();
    if (!llamaIn) await llama.dispose();
}

async function batch(argv) {
    if (argv.length !== 1) die("batch needs one job file");
    const jobs = fs.readFileSync(argv[0], "utf8").split("\n").map(l => l.trim()).filter(l => l.length);
    const llama = await initLlama(false);
    let failed = 0;
    for (const j of jobs) {
        try { await run(j.split(/\s+/), llama); }
        catch (e) { failed++; process.stderr.write("oracle: job '" + j.slice(0, 80) + "': " + (e?.message || e) + "\n"); }
    }
    await llama.dispose();
    process.exit(failed ? 1 : 0);
}

function readF32(file) {
    const b = fs.readFileSync(file);
    if (b.length % 4) die(file + ": size is not a multiple of 4");
    const out = new Float32Array(b.length / 4);
    for (let i = 0; i < out.length; i++) out[i] = b.readFloatLE(i * 4);
    return out;
}

function cmp(argv) {
    let k = 10;
    const files = [];
    for (let i = 0; i < argv.length; i++) {
        if (argv[i] === "--topk") k = Number(argv[++i]);
        else files.push(argv[i]);
    }
    if (files.length !== 2) die("cmp needs two files");
    const a = readF32(files[0]), b = readF32(files[1]);
    if (a.length !== b.length || a.length === 0) die(`length mismatch: ${a.length} vs ${b.length}`);
    let num = 0, den = 0, maxabs = 0, bad = 0;
    for (let i = 0; i < a.length; i++) {
        if (!Number.isFinite(a[i]) || !Number.isFinite(b[i])) { if (!(Object.is(a[i], b[i]))) bad++; continue; }
        const d = a[i] - b[i];
        num += d * d; den += a[i] * a[i];
        if (Math.abs(d) > maxabs) maxabs = Math.abs(d);
    }
    const nmse = bad ? Infinity : (den === 0 ? (num === 0 ? 0 : Infinity) : num / den);
    const top = x => Array.from(x.keys()).sort((i, j) => (x[j] - x[i]) || (i - j)).slice(0, k);
    const ta = new Set(top(a));
    const overlap = top(b).filter(i => ta.has(i)).length;
    process.stdout.write(`nmse=${nmse.toExponential(3)} maxabs=${maxabs.toExponential(3)} ` +
        `argmax_a=${argmax(a)} argmax_b=${argmax(b)} top${k}_overlap=${overlap}\n`);
}

const [cmd, ...rest] = process.argv.slice(2);
if (cmd === "run") run(rest).catch(e => { process.stderr.write("oracle: " + (e?.stack || e) + "\n"); process.exit(1); });
else if (cmd === "batch") batch(rest).catch(e => { process.stderr.write("oracle: " + (e?.stack || e) + "\n"); process.exit(1); });
else if (cmd === "cmp") cmp(rest);
else die("usage: oracle.mjs run -m M.gguf --ids 2,3,4 [-n 16] ... | oracle.mjs batch JOBS | oracle.mjs cmp A.f32 B.f32");
