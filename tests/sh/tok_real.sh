#!/bin/sh
# tok_real.sh - tokenizer on the real Gemma 4 vocabulary: the tok_real group of g4-test
# (llama.cpp's 46 cases, tests/vectors/tok_ref.txt, every token round trip, speed) and
# `g4 tokenize` end to end. Prints "skipped" when the vocabulary is not available.
B=${B:-build}
. tests/sh/tok_lib.inc
if [ -z "$VOCAB" ]; then
    echo "tok_real: skipped (no vocabulary: set G4_VOCAB or run make test-deps)"
    echo "0 passed, 0 failed"
    exit 0
fi
pass=0; fail=0
check() { # name, expected, actual
    if [ "$2" = "$3" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $1: expected [$2] got [$3]" >&2; fi
}
out=$(G4_VOCAB=$VOCAB "$B/g4-test" tok_real 2>"$B/tok_real.log"); rc=$?
cat "$B/tok_real.log" >&2
p=$(printf '%s\n' "$out" | sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\1/p')
f=$(printf '%s\n' "$out" | sed -n -E 's/^([0-9]+) passed, ([0-9]+) failed$/\2/p')
pass=$((pass + ${p:-0})); fail=$((fail + ${f:-1}))
[ "$rc" -eq 0 ] || [ "${f:-1}" -ne 0 ] || fail=$((fail + 1))
grep -q "tok_real: skipped" "$B/tok_real.log" && fail=$((fail + 1))

G4="$B/g4"
check ids "[2, 9259, 1902]" "$("$G4" tokenize -m "$VOCAB" -p "Hello world" --ids)"
check no-bos "[9259, 1902]" "$("$G4" tokenize -m "$VOCAB" -p "Hello world" --ids --no-bos)"
printf '<bos><|turn>user\nWhat is the capital of France?<turn|>\n<|turn>model\n' > "$B/tok_chat.txt"
check special "[2, 105, 2364, 107, 3689, 563, 506, 5279, 529, 7001, 236881, 106, 107, 105, 4368, 107]" \
    "$("$G4" tokenize -m "$VOCAB" -f "$B/tok_chat.txt" --ids --no-bos)"
check no-special "[236820, 236909, 887, 236813]" "$("$G4" tokenize -m "$VOCAB" -p "<|turn>" --ids --no-bos --no-parse-special)"
check user-defined "[236746, 236743, 100, 236763]" "$("$G4" tokenize -m "$VOCAB" -p "a <|channel>b" --ids --no-bos --no-parse-special)"
check pieces "$(printf '     2 -> '"'"'<bos>'"'"'\n  9259 -> '"'"'Hello'"'"'\n  1902 -> '"'"' world'"'"'')" \
    "$("$G4" tokenize -m "$VOCAB" -p "Hello world")"
printf 'a\r\nb' > "$B/tok_crlf.txt"
check file "[236746, 251, 107, 236763]" "$("$G4" tokenize -m "$VOCAB" -f "$B/tok_crlf.txt" --ids --no-bos)"
check empty "[2]" "$("$G4" tokenize -m "$VOCAB" -p "" --ids)"
"$G4" tokenize -m "$VOCAB" --ids >/dev/null 2>&1; check usage-rc 2 $?
"$G4" tokenize -m "$VOCAB" -p x --frob >/dev/null 2>&1; check unknown-rc 2 $?
"$G4" tokenize -m "$B/no-such.gguf" -p x >/dev/null 2>&1; check missing-rc 1 $?
"$G4" tokenize -m "$VOCAB" -f "$B/no-such.txt" >/dev/null 2>&1; check missing-file-rc 1 $?
"$G4" tokenize --help >/dev/null; check help-rc 0 $?
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
