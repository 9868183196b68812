// tok_diff.mjs - differential test input: N random strings (seeded) tokenized by llama.cpp and
// by the HF reference, in the fixture format of tok_lib.mjs (read by tests/test_tok.c with
// G4_TOK_DIFF=file). Used by tests/sh/tok_diff.sh; not committed.
//   node scripts/tok_diff.mjs [-n 10000] [-s seed] [vocab.gguf] > build/tok_diff.txt
import {loadHF, loadLlama, defaultVocab, line} from "./tok_lib.mjs";

let n = 10000, seed = 12345, vocab = null;
for (let i = 2; i < process.argv.length; i++) {
    const a = process.argv[i];
    if (a === "-n") n = Number(process.argv[++i]);
    else if (a === "-s") seed = Number(process.argv[++i]);
    else vocab = a;
}
vocab = vocab || defaultVocab();

// splitmix32-style PRNG: same seed, same strings
let st = seed >>> 0;
const rnd = () => { st = (st + 0x9e3779b9) >>> 0; let z = st; z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0; return ((z ^ (z >>> 16)) >>> 0) / 4294967296; };
const ri = k => Math.floor(rnd() * k);
const pick = a => a[ri(a.length)];

const words = ["the", "of", "and", "to", "in", "is", "was", "that", "for", "with", "Hello", "world", "token",
    "Gemma", "model", "quick", "brown", "fox", "don't", "I'm", "naïve", "café", "über", "straße", "function",
    "return", "print", "self", "value", "x", "y", "i", "a", "A", "THE", "Über", "e\u0301", "http", "www", "com"];
const scripts = ["日本語", "東京", "中文", "你好", "世界", "한국어", "مرحبا", "العالم", "नमस्ते", "दुनिया", "Привет",
    "мир", "Γειά", "שלום", "ภาษาไทย", "ក្រុម", "Việt", "Ελλάδα", "ქართული", "հայերեն", "தமிழ்", "বাংলা"];
const emoji = ["😊", "👍", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "🇯🇵", "❤️", "🧑🏻‍💻", "🍕", "✨", "🙂", "🤖", "😂"];
const punct = [".", ",", "!", "?", ";", ":", "'", "\"", "(", ")", "[", "]", "{", "}", "-", "—", "_", "/", "\\",
    "@", "#", "$", "%", "^", "&", "*", "+", "=", "<", ">", "|", "~", "`", "…", "«", "»", "“", "”"];
const markers = ["<|turn>", "<turn|>", "<|channel>", "<channel|>", "<|think|>", "<|tool_call>", "<tool_call|>",
    "<|tool_response>", "<tool_response|>", "<|\"|>", "<|tool>", "<tool|>", "<bos>", "<eos>", "<pad>"];
const ws = () => pick([" ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", "\n".repeat(1 + ri(45)), "\r\n",
    "\u00A0", " \t ", "\u3000", " ".repeat(1 + ri(40))]);
const cp = () => { // random code point, no NUL, no surrogates
    const r = rnd();
    let c = r < 0.5 ? 1 + ri(0x7e) : r < 0.85 ? 0x80 + ri(0xd800 - 0x80) : r < 0.95 ? 0xe000 + ri(0x2000) : 0x10000 + ri(0x100000);
    return String.fromCodePoint(c);
};
const digits = () => String(ri(10 ** (1 + ri(9))));

function randomString() {
    const parts = [], k = ri(12);
    for (let i = 0; i < k; i++) {
        const r = rnd();
        if (r < 0.30) parts.push(pick(words));
        else if (r < 0.45) parts.push(ws());
        else if (r < 0.55) parts.push(pick(scripts));
        else if (r < 0.62) parts.push(pick(emoji));
        else if (r < 0.72) parts.push(pick(punct));
        else if (r < 0.80) parts.push(digits());
        else if (r < 0.92) { let s = ""; for (let j = 1 + ri(6); j > 0; j--) s += cp(); parts.push(s); }
        else parts.push(pick(markers));
        if (rnd() < 0.5) parts.push(" ");
    }
    return parts.join("");
}

const hf = await loadHF();
const ll = await loadLlama(vocab);
const out = [`# tok_diff: ${n} random strings, seed ${seed}`];
let disagree = 0;
for (let i = 0; i < n; i++) {
    const text = randomString();
    const flags = pick([0, 2, 2, 3]);
    const bos = (flags & 1) !== 0, special = (flags & 2) !== 0;
    const l = ll.encode(text, bos, special);
    const h = special ? hf.encode(text, bos) : null;
    if (h && h.join() !== l.join()) disagree++;
    out.push(line(flags, text, l, h));
}
process.stdout.write(out.join("\n") + "\n");
process.stderr.write(`tok_diff: ${n} strings, ${disagree} where llama.cpp and HF disagree\n`);
