#!/bin/sh
# spec_cli.sh - speculative decoding through `g4 run` / `g4 chat` / `g4 info` on a generated
# target + assistant pair (no node needed): greedy output identical to plain decoding for
# ngram-simple and draft-mtp (and with the draft cut by -n and the context), -v counts,
# sampled runs reproducible by seed, chat equal to plain chat, usage errors (exit 2) and a
# mismatched assistant (exit 1, one line).
B=${B:-build}
G4=${G4:-$B/g4}
MK=$B/g4-mkmodel
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
check() { # check DESCRIPTION COMMAND...
    d=$1; shift
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $d" >&2; fi
}
rc_of() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }

if ! "$MK" "$tmp/m.gguf" >"$tmp/mk.log" 2>&1 || ! "$MK" "$tmp/a.gguf" --assistant >>"$tmp/mk.log" 2>&1 ||
   ! "$MK" "$tmp/a96.gguf" --assistant --embd 96 >>"$tmp/mk.log" 2>&1; then
    echo "FAIL g4-mkmodel: $(tail -n 1 "$tmp/mk.log")" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
M=$tmp/m.gguf
A=$tmp/a.gguf
P=2,300,301,302,303,310,45,99,300,301,302,303,310,17,33,300,301,302,260,261,45,99,300,301,302,303,310,45
run() { "$G4" run -m "$M" -p "$P" --ids -n 48 --temp 0 --repeat-penalty 1 -t 1 "$@"; }

run >"$tmp/plain" 2>/dev/null
check "plain run" [ -s "$tmp/plain" ]
for v in "--spec-type ngram-simple" "--spec-type ngram-simple --spec-ngram-simple-size-n 1 --spec-ngram-simple-size-m 4" \
         "-md $A" "-md $A --spec-draft-n-max 6" "--spec-type draft-mtp -md $A --draft-max 2 --draft-min 2" \
         "-md $A --draft-p-min 0.2"; do
    # shellcheck disable=SC2086
    run $v -v >"$tmp/o" 2>"$tmp/e"
    check "$v: exit 0" [ $? -eq 0 ]
    check "$v: same ids as plain decoding" cmp -s "$tmp/plain" "$tmp/o" || { [ -n "$VERBOSE" ] && cat "$tmp/e" >&2; }
    check "$v: -v reports drafted and accepted" grep -q "speculative: .* drafted [0-9]*, accepted [0-9]*" "$tmp/e"
done
# -c 40: 28 prompt tokens + 48 > 40: the context fills, speculative or not, at the same token
run -c 40 >"$tmp/p40" 2>"$tmp/e40"
run -c 40 -md "$A" --draft-max 8 >"$tmp/s40" 2>"$tmp/es40"
check "context full: same ids" cmp -s "$tmp/p40" "$tmp/s40"
check "context full: reported" grep -q "context full" "$tmp/es40"
# n-grams find matches on this model (it repeats itself without a repeat penalty)
run --spec-type ngram-simple --spec-ngram-simple-size-n 1 --spec-ngram-simple-size-m 4 -v >/dev/null 2>"$tmp/e"
check "ngram-simple drafts here" grep -q "drafted [1-9]" "$tmp/e"
# sampled: reproducible by seed (the rejection rule draws from the sampler's RNG)
"$G4" run -m "$M" -p "$P" --ids -n 32 --temp 0.8 -s 5 -t 1 -md "$A" >"$tmp/s1" 2>/dev/null
"$G4" run -m "$M" -p "$P" --ids -n 32 --temp 0.8 -s 5 -t 1 -md "$A" >"$tmp/s2" 2>/dev/null
check "sampled speculative run: 32 ids" [ "$(tr ',' '\n' <"$tmp/s1" | grep -c '^[0-9][0-9]*$')" -eq 32 ]
check "sampled speculative run: reproducible" cmp -s "$tmp/s1" "$tmp/s2"
# text mode and chat
"$G4" run -m "$M" -p "the quick brown fox" -n 24 --temp 0 -t 1 >"$tmp/t1" 2>/dev/null
"$G4" run -m "$M" -p "the quick brown fox" -n 24 --temp 0 -t 1 --spec-type ngram-simple >"$tmp/t2" 2>/dev/null
check "text mode: same text" cmp -s "$tmp/t1" "$tmp/t2"
printf 'hello there\nthe capital of france is\n' | "$G4" chat -m "$M" --temp 0 -n 20 -t 1 >"$tmp/c1" 2>/dev/null
printf 'hello there\nthe capital of france is\n' | "$G4" chat -m "$M" --temp 0 -n 20 -t 1 -md "$A" -v >"$tmp/c2" 2>"$tmp/ce"
check "chat: same answers with draft-mtp" cmp -s "$tmp/c1" "$tmp/c2"
check "chat: -v counts" grep -q "g4 chat: speculative:" "$tmp/ce"
printf 'hello there\nthe capital of france is\n' | "$G4" chat -m "$M" --temp 0 -n 20 -t 1 --spec-type ngram-simple \
    --spec-ngram-simple-size-n 1 >"$tmp/c3" 2>/dev/null
check "chat: same answers with ngram-simple" cmp -s "$tmp/c1" "$tmp/c3"
# g4 info validates the pair
check "info -md: ok" [ "$(rc_of "$G4" info -m "$M" -md "$A")" -eq 0 ]
check "info -md: assistant line" grep -q "^assistant: .*4 layers of 64" "$tmp/out"
check "info on an assistant alone: exit 1" [ "$(rc_of "$G4" info -m "$A")" -eq 1 ]
check "info on an assistant alone: says so" grep -q "Gemma 4 assistant" "$tmp/err"
# errors
check "mismatched assistant: exit 1" [ "$(rc_of run -md "$tmp/a96.gguf")" -eq 1 ]
check "mismatched assistant: one line naming the key" [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "embedding_length_out" "$tmp/err"
check "missing assistant file: exit 1" [ "$(rc_of run -md "$tmp/none.gguf")" -eq 1 ]
check "draft-mtp without -md: exit 2" [ "$(rc_of run --spec-type draft-mtp)" -eq 2 ]
check "unknown --spec-type: exit 2" [ "$(rc_of run --spec-type eagle)" -eq 2 ]
check "unknown --spec-type: message" grep -q "spec-type expects" "$tmp/err"
check "--draft-max 0: exit 2" [ "$(rc_of run -md "$A" --draft-max 0)" -eq 2 ]
check "--draft-min > --draft-max: exit 2" [ "$(rc_of run -md "$A" --draft-max 2 --draft-min 3)" -eq 2 ]
check "--draft-p-min 2: exit 2" [ "$(rc_of run -md "$A" --draft-p-min 2)" -eq 2 ]
check "--help lists --spec-type" sh -c "\"$G4\" run --help | grep -q -- --spec-type"
# g4 bench --verify: decode, verify and draft rows, ratios to the decode step
check "bench --verify: exit 0" [ "$(rc_of "$G4" bench -m "$M" --verify 1,3 -md "$A" -t 1 -r 2 -d 16)" -eq 0 ]
check "bench --verify: decode row at 1.000" grep -q "| decode .* 1.000 |" "$tmp/out"
check "bench --verify: verify3 and draft rows" sh -c "grep -q '| verify3 ' '$tmp/out' && grep -q '| draft-mtp step ' '$tmp/out'"
check "bench --verify -o json" [ "$(rc_of "$G4" bench -m "$M" --verify 1,2 -t 1 -r 2 -d 16 -o json)" -eq 0 ]
check "bench --verify -o json: ratio field" grep -q '"ratio_to_decode": 1.0000' "$tmp/out"
check "bench -md without --verify: exit 2" [ "$(rc_of "$G4" bench -m "$M" -md "$A")" -eq 2 ]
echo "$pass passed, $fail failed"
