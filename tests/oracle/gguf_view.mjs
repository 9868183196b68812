// gguf_view.mjs - llama.cpp's view of a GGUF next to `g4 info --json --tensors`, for
// tests/sh/oracle_info.sh. Loads the file with llama.cpp v0.5.0 (node-llama-cpp 3.22.1, CPU
// prebuilt; a full load, so llama.cpp's own validation runs), then compares:
//   - every metadata key/value (node-llama-cpp's GGUF reader) with g4's,
//   - every tensor's name, type and shape,
//   - llama.cpp's hyperparameters as loaded (training context, embedding size, vocabulary,
//     layer count from its model description) with g4's.
// Prints one line per mismatch and ends with "N passed, M failed". Run it as a file.
//   node tests/oracle/gguf_view.mjs G4_BINARY MODEL.gguf
import {createRequire} from "node:module";
import {execFileSync} from "node:child_process";
import path from "node:path";
import process from "node:process";

const [g4bin, file] = process.argv.slice(2);
const typeIds = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8, "q8_1": 9, "q2_K": 10, "q3_K": 11, "q4_K": 12, "q5_K": 13, "q6_K": 14, "q8_K": 15, "iq2_xxs": 16, "iq2_xs": 17, "iq3_xxs": 18, "iq1_s": 19, "iq4_nl": 20, "iq3_s": 21, "iq2_s": 22, "iq4_xs": 23, "i8": 24, "i16": 25, "i32": 26, "i64": 27, "f64": 28, "iq1_m": 29, "bf16": 30};
let pass = 0, fail = 0;
function check(ok, what) { if (ok) pass++; else { fail++; console.error("MISMATCH: " + what); } }

const req = createRequire(path.join(path.dirname(new URL(import.meta.url).pathname), "package.json"));
const {getLlama, LlamaLogLevel} = await import(req.resolve("node-llama-cpp"));
const g4 = JSON.parse(execFileSync(g4bin, ["info", "-m", file, "--json", "--tensors"], {encoding: "utf8"}));

const llama = await getLlama({gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true,
    progressLogs: false, logLevel: LlamaLogLevel.error, logger() {}});
let model;
try {
    model = await llama.loadModel({modelPath: file, gpuLayers: 0});
    pass++;
} catch (e) {
    fail++;
    console.error("MISMATCH: llama.cpp refused the file: " + e.message);
}
if (model) {
    const fi = model.fileInfo;
    // tensors: names, types, shapes in file order
    const lt = fi.tensorInfo ?? [];
    check(lt.length === g4.tensors.length, `tensor count llama ${lt.length} g4 ${g4.tensors.length}`);
    for (let i = 0; i < Math.min(lt.length, g4.tensors.length); i++) {
        const a = lt[i], b = g4.tensors[i];
        check(a.name === b.name, `tensor ${i} name ${a.name} vs ${b.name}`);
        const dims = a.dimensions.map(Number);
        check(JSON.stringify(dims) === JSON.stringify(b.shape), `tensor ${a.name} shape ${dims} vs ${b.shape}`);
        check(Number(a.ggmlType) === typeIds[b.type], `tensor ${a.name} type ${a.ggmlType} vs ${b.type}`);
        check(Number(a.offset) === b.offset, `tensor ${a.name} offset ${a.offset} vs ${b.offset}`);
    }
    // metadata: flatten node-llama-cpp's nested object to dotted keys
    const flat = {};
    (function walk(o, pre) {
        for (const [k, v] of Object.entries(o)) {
            const key = pre ? pre + "." + k : k;
            if (v && typeof v === "object" && !Array.isArray(v) && !ArrayBuffer.isView(v)) walk(v, key);
            else flat[key] = v;
        }
    })(fi.metadata, "");
    for (const [k, v] of Object.entries(g4.metadata)) {
        const lv = flat[k];
        if (v && typeof v === "object" && !Array.isArray(v)) { // summarised array
            check(lv != null && lv.length === v.n, `key ${k}: array length ${lv?.length} vs ${v.n}`);
        } else if (Array.isArray(v)) {
            const la = Array.from(lv ?? [], x => typeof x === "boolean" ? (x ? "true" : "false") : Number(x));
            const ga = v.map(x => typeof x === "boolean" ? (x ? "true" : "false") : Number(x));
            check(JSON.stringify(la) === JSON.stringify(ga), `key ${k}: ${la} vs ${ga}`);
        } else if (typeof v === "number") {
            check(Math.abs(Number(lv) - v) <= 1e-6 * Math.abs(v), `key ${k}: ${lv} vs ${v}`);
        } else {
            check(String(lv) === String(v), `key ${k}: ${lv} vs ${v}`);
        }
    }
    check(Object.keys(flat).length === Object.keys(g4.metadata).length,
          `key count llama ${Object.keys(flat).length} g4 ${Object.keys(g4.metadata).length}`);
    // llama.cpp's loaded hyperparameters
    check(model.trainContextSize === g4.hparams.n_ctx_train, `n_ctx_train ${model.trainContextSize} vs ${g4.hparams.n_ctx_train}`);
    check(model.embeddingVectorSize === g4.hparams.n_embd, `n_embd ${model.embeddingVectorSize} vs ${g4.hparams.n_embd}`);
    const nv = model.tokens?.trainedVocabularySize ?? model.vocabularySize;
    if (nv != null) check(Number(nv) === g4.hparams.n_vocab, `n_vocab ${nv} vs ${g4.hparams.n_vocab}`);
    check(Number(model.size) > 0, "llama.cpp model size");
    check(Number(model.parameterCount ?? g4.n_params) === g4.n_params, `params ${model.parameterCount} vs ${g4.n_params}`);
    await model.dispose();
}
await llama.dispose();
console.log(`${pass} passed, ${fail} failed`);
