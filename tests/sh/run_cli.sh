#!/bin/sh
# run_cli.sh - the `g4 run` contract on a generated model (no node needed): --ids output,
# --dump-logits size and agreement across --ubatch / -t / repeated runs, text mode, exit
# codes (0 ok, 1 runtime error with one line, 2 usage), context full.
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

if ! "$MK" "$tmp/m.gguf" >"$tmp/mk.log" 2>&1; then
    echo "FAIL g4-mkmodel: $(tail -n 1 "$tmp/mk.log")" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
M=$tmp/m.gguf
P=2,17,33,45,99,100,101,102,103,104,105,106,260,261,300,301,302,303,310,311

# --ids: exactly n comma-separated ids, one line; logits file = n_vocab float32
"$G4" run -m "$M" -p "$P" --ids -n 12 --temp 0 -t 1 --dump-logits "$tmp/a.f32" >"$tmp/a.ids" 2>"$tmp/a.err"
check "--ids exit 0" [ $? -eq 0 ]
check "--ids prints 12 ids" [ "$(tr ',' '\n' <"$tmp/a.ids" | grep -c '^[0-9][0-9]*$')" -eq 12 ]
check "--ids one line" [ "$(wc -l <"$tmp/a.ids")" -eq 1 ]
check "--dump-logits n_vocab*4 bytes" [ "$(wc -c <"$tmp/a.f32")" -eq $((512 * 4)) ]

# the same ids and logits with other chunkings, threads, spaces in the list, cache types
"$G4" run -m "$M" -p "$P" --ids -n 12 --temp 0 -t 2 --ubatch 3 --dump-logits "$tmp/b.f32" >"$tmp/b.ids" 2>/dev/null
check "--ubatch 3 -t 2: same ids" cmp -s "$tmp/a.ids" "$tmp/b.ids"
check "--ubatch 3 -t 2: same logits" cmp -s "$tmp/a.f32" "$tmp/b.f32"
"$G4" run -m "$M" -p "$(echo "$P" | sed 's/,/, /g')" --ids -n 12 --temp 0 >"$tmp/c.ids" 2>/dev/null
check "ids with spaces" cmp -s "$tmp/a.ids" "$tmp/c.ids"
printf '%s\n' "$P" >"$tmp/p.txt"
"$G4" run -m "$M" -f "$tmp/p.txt" --ids -n 12 --temp 0 >"$tmp/d.ids" 2>/dev/null
check "-f with --ids" cmp -s "$tmp/a.ids" "$tmp/d.ids"
# --no-repack: the same ids and logits from the Q4_K matrices as stored (where the kernel set
# repacks them at open: the zmm AVX-512 one; elsewhere both runs are the same path)
if "$MK" "$tmp/q.gguf" --type q4_k --embd-type q8_0 --embd 256 --ff 512 --heads 4 --head-dim 64 --head-dim-full 128 \
        --ple 0 >"$tmp/mk.log" 2>&1; then
    "$G4" run -m "$tmp/q.gguf" -p "$P" --ids -n 8 --temp 0 -t 2 -v --dump-logits "$tmp/r1.f32" >"$tmp/r1.ids" 2>"$tmp/r1.err"
    "$G4" run -m "$tmp/q.gguf" -p "$P" --ids -n 8 --temp 0 -t 2 --no-repack --dump-logits "$tmp/r2.f32" >"$tmp/r2.ids" 2>/dev/null
    check "Q4_K model: 8 ids" [ "$(tr ',' '\n' <"$tmp/r1.ids" | grep -c '^[0-9][0-9]*$')" -eq 8 ]
    check "--no-repack: same ids" cmp -s "$tmp/r1.ids" "$tmp/r2.ids"
    check "--no-repack: same logits" cmp -s "$tmp/r1.f32" "$tmp/r2.f32"
    # too little memory available for the repack (G4_MEM_AVAILABLE, MiB, stands in for
    # MemAvailable): the matrices stay as stored, with a warning, and the results are the same
    G4_MEM_AVAILABLE=1 "$G4" run -m "$tmp/q.gguf" -p "$P" --ids -n 8 --temp 0 -t 2 --dump-logits "$tmp/r3.f32" \
        >"$tmp/r3.ids" 2>"$tmp/r3.err"
    check "1 MiB available: same ids" cmp -s "$tmp/r1.ids" "$tmp/r3.ids"
    check "1 MiB available: same logits" cmp -s "$tmp/r1.f32" "$tmp/r3.f32"
    check "1 MiB available: nothing repacked" sh -c "! grep -q 'repacked [0-9]* Q4_K' '$tmp/r3.err'"
    if grep -q 'repacked [0-9]* Q4_K' "$tmp/r1.err"; then
        check "1 MiB available: warns the Q4_K matrices stay as stored" grep -q 'kept as stored, not repacked: more than 3/4 of the memory available' "$tmp/r3.err"
    else
        echo "  (this kernel set repacks nothing: only the equality checked)" >&2
    fi
else
    check "g4-mkmodel --type q4_k" false
fi
# Q6_K matrices repacked at open (where the kernel set does it: the zmm AVX-512 one), the tied
# Q6_K head too, whose embedding lookups then read rows back from its tiles: the same ids and
# logits as from the matrices as stored
if "$MK" "$tmp/q6.gguf" --type q6_k --embd-type q6_k --embd 256 --ff 512 --heads 4 --head-dim 64 --head-dim-full 128 \
        --ple 0 >"$tmp/mk.log" 2>&1; then
    "$G4" run -m "$tmp/q6.gguf" -p "$P" --ids -n 8 --temp 0 -t 2 -v --dump-logits "$tmp/s1.f32" >"$tmp/s1.ids" 2>"$tmp/s1.err"
    "$G4" run -m "$tmp/q6.gguf" -p "$P" --ids -n 8 --temp 0 -t 2 --no-repack --dump-logits "$tmp/s2.f32" >"$tmp/s2.ids" 2>/dev/null
    check "Q6_K model: 8 ids" [ "$(tr ',' '\n' <"$tmp/s1.ids" | grep -c '^[0-9][0-9]*$')" -eq 8 ]
    check "Q6_K --no-repack: same ids" cmp -s "$tmp/s1.ids" "$tmp/s2.ids"
    check "Q6_K --no-repack: same logits" cmp -s "$tmp/s1.f32" "$tmp/s2.f32"
    if grep -q 'repacked [0-9]* Q4_K / Q6_K' "$tmp/s1.err"; then
        G4_MEM_AVAILABLE=1 "$G4" run -m "$tmp/q6.gguf" -p "$P" --ids -n 8 --temp 0 -t 2 --dump-logits "$tmp/s3.f32" \
            >"$tmp/s3.ids" 2>"$tmp/s3.err"
        check "Q6_K, 1 MiB available: same logits" cmp -s "$tmp/s1.f32" "$tmp/s3.f32"
        check "Q6_K, 1 MiB available: warns the matrices stay as stored" grep -q 'kept as stored, not repacked' "$tmp/s3.err"
    else
        echo "  (this kernel set repacks no Q6_K: only the equality checked)" >&2
    fi
else
    check "g4-mkmodel --type q6_k" false
fi
# the streamed matrices copied into huge pages at open (model.c copy_weights; where the kernel
# hands out transparent huge pages): the same ids and logits as read in place (G4_COPY=0)
if "$MK" "$tmp/q5.gguf" --type q5_k --embd-type q5_k --embd 256 --ff 512 --heads 4 --head-dim 64 --head-dim-full 128 \
        --ple 0 >"$tmp/mk.log" 2>&1; then
    "$G4" run -m "$tmp/q5.gguf" -p "$P" --ids -n 8 --temp 0 -t 2 -v --dump-logits "$tmp/c1.f32" >"$tmp/c1.ids" 2>"$tmp/c1.err"
    G4_COPY=0 "$G4" run -m "$tmp/q5.gguf" -p "$P" --ids -n 8 --temp 0 -t 2 -v --dump-logits "$tmp/c2.f32" >"$tmp/c2.ids" 2>"$tmp/c2.err"
    check "Q5_K model: 8 ids" [ "$(tr ',' '\n' <"$tmp/c1.ids" | grep -c '^[0-9][0-9]*$')" -eq 8 ]
    check "G4_COPY=0: same ids" cmp -s "$tmp/c1.ids" "$tmp/c2.ids"
    check "G4_COPY=0: same logits" cmp -s "$tmp/c1.f32" "$tmp/c2.f32"
    check "G4_COPY=0: nothing copied" sh -c "! grep -q 'into huge pages' '$tmp/c2.err'"
    if grep -q -E '\[(always|madvise)\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; then
        check "Q5_K matrices copied into huge pages" grep -q 'copied .* matrices .* into huge pages' "$tmp/c1.err"
        G4_MEM_AVAILABLE=1 "$G4" run -m "$tmp/q5.gguf" -p "$P" --ids -n 8 --temp 0 -t 2 --dump-logits "$tmp/c3.f32" \
            >"$tmp/c3.ids" 2>"$tmp/c3.err"
        check "1 MiB available: same logits, not copied" cmp -s "$tmp/c1.f32" "$tmp/c3.f32"
        check "1 MiB available: warns the matrices stay as stored" grep -q 'kept as stored, not copied into huge pages' "$tmp/c3.err"
    else
        echo "  (no transparent huge pages on request here: the copy is not made, only the equality checked)" >&2
    fi
else
    check "g4-mkmodel --type q5_k" false
fi
for c in f32 q8_0; do
    "$G4" run -m "$M" -p "$P" --ids -n 4 --temp 0 --cache-type $c >"$tmp/e.ids" 2>/dev/null
    check "--cache-type $c runs" [ "$(tr ',' '\n' <"$tmp/e.ids" | wc -l)" -eq 4 ]
done

# seeded sampling is reproducible
"$G4" run -m "$M" -p "$P" --ids -n 12 --temp 0.8 -s 42 >"$tmp/s1" 2>/dev/null
"$G4" run -m "$M" -p "$P" --ids -n 12 --temp 0.8 -s 42 --top-k 40 --top-p 0.95 --min-p 0.05 --repeat-penalty 1.0 >"$tmp/s2" 2>/dev/null
check "same seed, same ids" cmp -s "$tmp/s1" "$tmp/s2"

# text mode: BOS + tokenized text, output text, -v memory plan on stderr
"$G4" run -m "$M" -p "the quick brown fox" -n 8 --temp 0 -v >"$tmp/t.out" 2>"$tmp/t.err"
check "text mode exit 0" [ $? -eq 0 ]
check "-v memory plan" grep -q "KV cache" "$tmp/t.err"
check "-v weights line" grep -q "weights" "$tmp/t.err"

# context full while generating: stops, exit 0, a note on stderr
check "context full: exit 0" [ "$(rc_of "$G4" run -m "$M" -p "$P" --ids -n 50 --temp 0 -c 24)" -eq 0 ]
check "context full: 5 ids (4 evaluated + 1 sampled)" [ "$(tr ',' '\n' <"$tmp/out" | wc -l)" -eq 5 ]
check "context full: note" grep -q "context full" "$tmp/err"

# runtime errors: exit 1, one line
check "prompt longer than the context: exit 1" [ "$(rc_of "$G4" run -m "$M" -p "$P" --ids -n 1 -c 8 --temp 0)" -eq 1 ]
check "one error line" [ "$(wc -l <"$tmp/err")" -eq 1 ]
check "id out of range: exit 1" [ "$(rc_of "$G4" run -m "$M" -p 2,512 --ids -n 1)" -eq 1 ]
check "missing model: exit 1" [ "$(rc_of "$G4" run -m "$tmp/none.gguf" -p 2 --ids)" -eq 1 ]

# usage errors: exit 2
check "no -m: exit 2" [ "$(rc_of "$G4" run -p 2)" -eq 2 ]
check "no prompt: exit 2" [ "$(rc_of "$G4" run -m "$M")" -eq 2 ]
check "bad id list: exit 2" [ "$(rc_of "$G4" run -m "$M" -p 2,x --ids)" -eq 2 ]
check "bad cache type: exit 2" [ "$(rc_of "$G4" run -m "$M" -p 2 --cache-type q4)" -eq 2 ]
check "bad -n: exit 2" [ "$(rc_of "$G4" run -m "$M" -p 2 -n -5)" -eq 2 ]
check "unknown flag: exit 2" [ "$(rc_of "$G4" run -m "$M" -p 2 --frobnicate)" -eq 2 ]
check "-h: exit 0" [ "$(rc_of "$G4" run -h)" -eq 0 ]
check "-h on stdout" grep -q "usage: g4 run" "$tmp/out"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
