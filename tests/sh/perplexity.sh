#!/bin/sh
# perplexity.sh - `g4 perplexity` on a tiny random model and Jane Austen's novels (Debian's
# r-cran-janeaustenr, extracted by scripts/austen.py; cached under build/austen/): llama-perplexity's
# output format, deterministic results (same run twice, 1 vs 2 threads), the same perplexity as
# llama.cpp's (tests/oracle/ppl_llama.mjs, when tests/oracle/node_modules exists), and the KL-divergence
# mode: a model against itself gives KLD 0, 100 % top-1 agreement and infinite SQNR; the F32
# model against its own Q4_K quantization gives KLD > 0, agreement < 100 % and a finite SQNR.
# Hostile base files (truncated, bad header fields, ids out of range, repeated ids, NaN) and bad
# flags are refused with exit 1 / 2 and one clear line.
# If the Austen package cannot be fetched (no apt-get, no network, no python3) the test prints
# a note and "0 passed, 0 failed".
B=${B:-build}
G4=${G4:-$B/g4}
MK=$B/g4-mkmodel
pass=0; fail=0
ok() { pass=$((pass + 1)); [ -n "$VERBOSE" ] && echo "ok   $*"; return 0; }
bad() { fail=$((fail + 1)); echo "FAIL $*" >&2; }
if [ ! -x "$G4" ] || [ ! -x "$MK" ]; then echo "perplexity: $G4 or $MK missing (run make)" >&2; echo "0 passed, 1 failed"; exit 1; fi

# ---- the corpus (cached; sha256 from shared/docs/test-data.md §4) ----
SHA=65b434d16a8755142bfa95ba19c5f9abd0d30cf3dffe3b6793e834f9f56dcc96
A=${G4_CORPUS_DIR:-build/austen}   # shared by the normal and sanitizer runs
sha_ok() { [ -f "$A/austen.txt" ] && [ "$(sha256sum "$A/austen.txt" 2>/dev/null | cut -d' ' -f1)" = "$SHA" ]; }
if ! sha_ok; then
    mkdir -p "$A"
    if command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1; then
        ( cd "$A" && rm -f r-cran-janeaustenr_*.deb && timeout 120 apt-get download -q r-cran-janeaustenr >/dev/null 2>&1 \
          && rm -rf x && dpkg-deb -x r-cran-janeaustenr_*.deb x ) \
          && python3 scripts/austen.py "$A/x" >"$A/austen.txt" 2>/dev/null
    fi
    if ! sha_ok; then
        rm -f "$A/austen.txt"
        echo "perplexity: skipped: could not fetch and extract r-cran-janeaustenr (apt-get download, dpkg-deb, python3)" >&2
        echo "0 passed, 0 failed"
        exit 0
    fi
fi

tmp=$(mktemp -d)
[ -n "$KEEP" ] && echo "perplexity: files in $tmp" >&2
[ -z "$KEEP" ] && trap 'rm -rf "$tmp"' EXIT
# The first 40 kB (Emma's opening) keeps the run short: ~27k tokens with the test vocabulary.
head -c 40000 "$A/austen.txt" >"$tmp/text.txt"
head -c 300 "$A/austen.txt" >"$tmp/short.txt"
tail -c 40000 "$A/austen.txt" >"$tmp/other.txt"

SHAPE="--layers 4 --full-every 2 --shared 2 --embd 256 --heads 2 --head-dim 64 --head-dim-full 128 --ff 256 --ple 32"
"$MK" "$tmp/m.gguf" $SHAPE || { echo "0 passed, 1 failed"; exit 1; }
"$MK" "$tmp/v400.gguf" $SHAPE --vocab 400 || { echo "0 passed, 1 failed"; exit 1; }
"$G4" quantize "$tmp/m.gguf" "$tmp/q4k.gguf" Q4_K -t 2 2>/dev/null || { echo "perplexity: quantize failed" >&2; echo "0 passed, 1 failed"; exit 1; }

C="-c 128 --chunks 8"
P() { "$G4" perplexity "$@"; }

# ---- plain perplexity: format and determinism ----
if P -m "$tmp/m.gguf" -f "$tmp/text.txt" $C -t 1 >"$tmp/p1.out" 2>"$tmp/p1.err"; then ok "runs"; else bad "perplexity: $(tail -n 2 "$tmp/p1.err")"; fi
# (under the sanitizers the repeated runs are skipped: they are slow there and test nothing new)
if [ -z "$G4_SANITIZED" ]; then
    P -m "$tmp/m.gguf" -f "$tmp/text.txt" $C -t 1 >"$tmp/p2.out" 2>/dev/null
    P -m "$tmp/m.gguf" -f "$tmp/text.txt" $C -t 2 >"$tmp/p3.out" 2>/dev/null
else cp "$tmp/p1.out" "$tmp/p2.out"; cp "$tmp/p1.out" "$tmp/p3.out"; fi
head -n 1 "$tmp/p1.out" | grep -Eq '^(\[[1-8]\][0-9]+\.[0-9]{4},){8}$' && ok "[i]ppl line" || bad "[i]ppl line: $(head -n 1 "$tmp/p1.out")"
grep -Eq '^Final estimate: PPL = [0-9]+\.[0-9]{4} \+/- [0-9]+\.[0-9]{5}$' "$tmp/p1.out" && ok "final estimate line" \
    || bad "final line: $(cat "$tmp/p1.out")"
cmp -s "$tmp/p1.out" "$tmp/p2.out" && ok "deterministic (same run twice)" || bad "two runs differ: $(cat "$tmp/p1.out" "$tmp/p2.out")"
cmp -s "$tmp/p1.out" "$tmp/p3.out" && ok "deterministic (1 vs 2 threads)" || bad "1 vs 2 threads differ: $(cat "$tmp/p1.out" "$tmp/p3.out")"
grep -q "chunks of 128 tokens, 63 scored per chunk" "$tmp/p1.err" && grep -q "g4 perplexity: 8 chunks, 504 scored tokens in" "$tmp/p1.err" \
    && ok "chunking and timing on stderr" || bad "stderr: $(cat "$tmp/p1.err")"
ppl=$(sed -nE 's/^Final estimate: PPL = ([0-9.]+) .*/\1/p' "$tmp/p1.out")
awk -v x="$ppl" 'BEGIN { exit !(x > 1 && x < 1e6) }' && ok "ppl $ppl plausible" || bad "ppl '$ppl'"

# ---- against llama.cpp (tests/oracle/ppl_llama.mjs: its tokenizer, forward pass and scoring) ----
# The pair (tests/sh/oracle_pin.inc): g4's avx2 table against llama.cpp's haswell library (a pinned
# view of the npm packages); where the default pair differs (AVX-512 hosts) it runs too: gated for
# g4 avx512 / llama.cpp zen4, reported for other pairs (oracle_pin.inc oracle_default_gated).
. tests/sh/oracle_pin.inc
ppl_of() { sed -nE 's/^Final estimate: PPL = ([0-9.]+) .*/\1/p' "$1"; }
ppl_pair() { # pin|def: both models, each within its relative tolerance of llama.cpp's perplexity
    for mm in m:1e-4 q4k:1e-2; do
        mname=${mm%%:*} tol=${mm#*:}
        if [ "$1" = pin ]; then
            G4_ORACLE_MODULES="$tmp/pin" NODE_PRESERVE_SYMLINKS=1 node tests/oracle/ppl_llama.mjs -m "$tmp/$mname.gguf" -f "$tmp/text.txt" \
                -c 128 --chunks 8 -t 1 >"$tmp/ll.out" 2>"$tmp/ll.err" \
                && G4_ISA=avx2 "$G4" perplexity -m "$tmp/$mname.gguf" -f "$tmp/text.txt" $C -t 1 -ctk f32 >"$tmp/g4.out" 2>/dev/null
        else
            node tests/oracle/ppl_llama.mjs -m "$tmp/$mname.gguf" -f "$tmp/text.txt" -c 128 --chunks 8 -t 1 >"$tmp/ll.out" 2>"$tmp/ll.err" \
                && env -u G4_ISA "$G4" perplexity -m "$tmp/$mname.gguf" -f "$tmp/text.txt" $C -t 1 -ctk f32 >"$tmp/g4.out" 2>/dev/null
        fi
        st=$?
        lib=$(sed -n 's/^oracle: llama.cpp CPU backend //p' "$tmp/ll.err" | head -n 1)
        a=$(ppl_of "$tmp/ll.out"); b=$(ppl_of "$tmp/g4.out")
        [ -n "$VERBOSE" ] && echo "perplexity: [$1] $mname: llama.cpp ($lib) $a, g4 $b" >&2
        if [ "$1" = def ] && [ -n "$lib" ]; then DEF_LL=${lib#libggml-cpu-}; DEF_LL=${DEF_LL%.so}; fi
        if [ "$1" = pin ] && [ "$lib" != libggml-cpu-haswell.so ]; then bad "$mname: the pinned llama.cpp loaded '${lib:-nothing}', not haswell"; continue; fi
        if [ $st -ne 0 ]; then
            if [ "$1" = pin ]; then bad "$mname: llama.cpp or g4 run failed: $(tail -n 2 "$tmp/ll.err")"; else dbad=$((dbad + 1)); [ "$GATE" = 1 ] && bad "$mname (default pair): llama.cpp or g4 run failed"; fi
            continue
        fi
        if [ -n "$a" ] && [ -n "$b" ] && awk -v x="$a" -v y="$b" -v t="$tol" 'BEGIN { d = (x - y) / x; if (d < 0) d = -d; exit !(d <= t) }'; then
            if [ "$1" = pin ]; then ok "$mname: PPL $b matches llama.cpp's $a"; pok=$((pok + 1)); else dok=$((dok + 1)); fi
        elif [ "$1" = pin ]; then bad "$mname: PPL g4 '$b' vs llama.cpp '$a' (relative tolerance $tol)"
        elif [ "$GATE" = 1 ]; then dbad=$((dbad + 1)); bad "$mname (default pair g4 $DEF_G4 / llama.cpp $DEF_LL): PPL g4 '$b' vs llama.cpp '$a'"
        else dbad=$((dbad + 1)); echo "perplexity: default pair, not gated: $mname: g4 $b vs llama.cpp $a" >&2; fi
    done
}
if [ -n "$G4_SANITIZED" ] || [ ! -d "$ORACLE_NM/node-llama-cpp" ] || ! command -v node >/dev/null 2>&1; then
    echo "perplexity: llama.cpp comparison skipped (sanitizers, or no tests/oracle/node_modules or node; run make test-deps)" >&2
elif ! oracle_pin_cpu; then
    echo "perplexity: llama.cpp comparison skipped (the pinned pair needs x86-64 with AVX2, FMA, F16C, BMI2)" >&2
elif ! oracle_pin_haswell "$tmp/pin"; then bad "cannot write the pinned view of $ORACLE_NM"
else
    pok=0
    ppl_pair pin
    echo "pair: g4 avx2 / llama.cpp haswell (pinned view of the npm prebuilt): $pok of 2 perplexities within 1e-4 (F32), 1e-2 (Q4_K) of llama.cpp's"
    oracle_default_pair
    oracle_default_gate_init
    if oracle_default_differs; then
        dok=0 dbad=0
        ppl_pair def
        if [ "$GATE" = 1 ]; then
            echo "pair: g4 $DEF_G4 / llama.cpp $DEF_LL: $dok of 2 perplexities within the same tolerances"
            [ "$dok" -eq 2 ] || [ "$dbad" -gt 0 ] || bad "default pair: $dok of 2 perplexities compared"
        else
            echo "report: default pair g4 $DEF_G4 / llama.cpp $DEF_LL, not gated (this pair not checked on its host): $dok of $((dok + dbad)) perplexities within the same tolerances"
        fi
    fi
fi

# ---- KL divergence ----
if P -m "$tmp/m.gguf" -f "$tmp/text.txt" $C -t 2 --kl-divergence-base "$tmp/base.kld" >"$tmp/b.out" 2>"$tmp/b.err"; then ok "base written"
else bad "base: $(tail -n 2 "$tmp/b.err")"; fi
cmp -s "$tmp/b.out" "$tmp/p1.out" && ok "base run prints the same perplexity" || bad "base run output differs"
# 64 + 8 chunks * (128*4 + 63 * (16 + 8*32 + 4*64))
[ "$(wc -c <"$tmp/base.kld")" -eq $((64 + 8 * (512 + 63 * 528))) ] && ok "base file size" || bad "base file size $(wc -c <"$tmp/base.kld")"

kstat() { sed -nE "s/^$2 *: *([-0-9.a-z]+).*/\1/p" "$1" | head -n 1; }
if P -m "$tmp/m.gguf" -t 2 --kl-divergence-base "$tmp/base.kld" --kl-divergence >"$tmp/self.out" 2>"$tmp/self.err"; then ok "self compare runs"
else bad "self compare: $(tail -n 2 "$tmp/self.err")"; fi
[ "$(kstat "$tmp/self.out" "Mean    KLD")" = "0.000000" ] && ok "self KLD 0" || bad "self KLD: $(grep KLD "$tmp/self.out")"
[ "$(kstat "$tmp/self.out" "Maximum KLD")" = "0.000000" ] && ok "self max KLD 0" || bad "self max KLD"
[ "$(kstat "$tmp/self.out" "Same top p")" = "100.000" ] && ok "self agreement 100%" || bad "self agreement: $(grep Same "$tmp/self.out")"
grep -q "^Logit SQNR: inf dB" "$tmp/self.out" && ok "self SQNR inf" || bad "self SQNR: $(grep SQNR "$tmp/self.out")"
head -n 2 "$tmp/self.out" | cmp -s - "$tmp/p1.out" && ok "compare mode perplexity from the stored tokens" || bad "compare-mode ppl differs"

if P -m "$tmp/q4k.gguf" -f "$tmp/text.txt" -t 2 --kl-divergence-base "$tmp/base.kld" --kl-divergence >"$tmp/q.out" 2>"$tmp/q.err"; then
    ok "q4_k compare runs"
else bad "q4_k compare: $(tail -n 2 "$tmp/q.err")"; fi
kld=$(kstat "$tmp/q.out" "Mean    KLD"); top=$(kstat "$tmp/q.out" "Same top p"); sq=$(sed -nE 's/^Logit SQNR: *([-0-9.a-z]+) dB.*/\1/p' "$tmp/q.out")
[ -n "$VERBOSE" ] && echo "perplexity: F32 vs Q4_K: KLD $kld, same top $top %, SQNR $sq dB" >&2
awk -v x="$kld" 'BEGIN { exit !(x > 0 && x < 10) }' && ok "q4_k KLD $kld > 0" || bad "q4_k KLD '$kld'"
awk -v x="$top" 'BEGIN { exit !(x > 50 && x < 100) }' && ok "q4_k agreement $top < 100%" || bad "q4_k agreement '$top'"
awk -v x="$sq" 'BEGIN { exit !(x > 0 && x < 100) }' && ok "q4_k SQNR $sq dB finite" || bad "q4_k SQNR '$sq'"
if [ -z "$G4_SANITIZED" ]; then P -m "$tmp/q4k.gguf" -t 2 --kl-divergence-base "$tmp/base.kld" --kl-divergence >"$tmp/q2.out" 2>/dev/null
else cp "$tmp/q.out" "$tmp/q2.out"; fi
cmp -s "$tmp/q.out" "$tmp/q2.out" && ok "kld deterministic (with and without -f)" || bad "kld runs differ"

# ---- hostile base files: exit 1, one line naming the file ----
hostile() { # what file
    P -m "$tmp/m.gguf" -t 1 --kl-divergence-base "$2" --kl-divergence >"$tmp/h.out" 2>"$tmp/h.err"; rc=$?
    if [ "$rc" -eq 1 ] && grep -q "g4 perplexity: $2" "$tmp/h.err"; then ok "refuses $1"
    else bad "$1: exit $rc: $(tail -n 2 "$tmp/h.err")"; fi
}
patch() { # src dst offset hexbytes...
    cp "$1" "$2"; dst=$2; off=$3; shift 3
    printf "$(printf '\\%03o' $(for h in "$@"; do printf '%d ' "0x$h"; done))" | dd of="$dst" bs=1 seek="$off" conv=notrunc 2>/dev/null
}
head -c 1000 "$tmp/base.kld" >"$tmp/h1.kld"; hostile "a truncated file" "$tmp/h1.kld"
head -c 10 "$tmp/base.kld" >"$tmp/h2.kld"; hostile "a 10-byte file" "$tmp/h2.kld"
: >"$tmp/h3.kld"; hostile "an empty file" "$tmp/h3.kld"
cat "$tmp/base.kld" "$tmp/short.txt" >"$tmp/h4.kld"; hostile "trailing bytes" "$tmp/h4.kld"
patch "$tmp/base.kld" "$tmp/h5.kld" 0 48; hostile "a bad magic" "$tmp/h5.kld"
patch "$tmp/base.kld" "$tmp/h6.kld" 20 00 00 00 00; hostile "top_k 0" "$tmp/h6.kld"
patch "$tmp/base.kld" "$tmp/h7.kld" 20 ff ff ff 7f; hostile "a huge top_k" "$tmp/h7.kld"
patch "$tmp/base.kld" "$tmp/h8.kld" 28 ff ff ff ff; hostile "a huge chunk count" "$tmp/h8.kld"
patch "$tmp/base.kld" "$tmp/h9.kld" 12 00 00 00 00; hostile "n_ctx 0" "$tmp/h9.kld"
patch "$tmp/base.kld" "$tmp/h10.kld" 44 00 01 00 00; hostile "a wrong record size" "$tmp/h10.kld"
patch "$tmp/base.kld" "$tmp/h11.kld" 50 01; hostile "reserved bytes set" "$tmp/h11.kld"
R0=$((64 + 512))            # first record of chunk 1
patch "$tmp/base.kld" "$tmp/h12.kld" $((R0 + 16)) ff ff 00 00; hostile "a top-k id out of range" "$tmp/h12.kld"
ID0=$(od -An -tx1 -j $((R0 + 16)) -N 4 "$tmp/base.kld")
# shellcheck disable=SC2086
patch "$tmp/base.kld" "$tmp/h13.kld" $((R0 + 20)) $ID0; hostile "a repeated top-k id" "$tmp/h13.kld"
patch "$tmp/base.kld" "$tmp/h14.kld" $((R0 + 16 + 128)) 00 00 c0 7f; hostile "a NaN logit" "$tmp/h14.kld"
patch "$tmp/base.kld" "$tmp/h15.kld" $((R0 + 8)) 00 00 00 40; hostile "a tail mass of 2" "$tmp/h15.kld"
patch "$tmp/base.kld" "$tmp/h16.kld" 64 ff ff ff 0f; hostile "a token id out of range" "$tmp/h16.kld"
patch "$tmp/base.kld" "$tmp/h17.kld" $((R0 + 16 + 256 + 4)) 00 00 80 7f; hostile "an infinite sketch value" "$tmp/h17.kld"

# a base file for another vocabulary, another text, another -c
P -m "$tmp/v400.gguf" -t 1 --kl-divergence-base "$tmp/base.kld" --kl-divergence >/dev/null 2>"$tmp/e.err"
[ $? -eq 1 ] && grep -q "vocabulary" "$tmp/e.err" && ok "vocabulary mismatch refused" || bad "vocabulary mismatch: $(cat "$tmp/e.err")"
P -m "$tmp/m.gguf" -f "$tmp/other.txt" -t 1 --kl-divergence-base "$tmp/base.kld" --kl-divergence >/dev/null 2>"$tmp/e.err"
[ $? -eq 1 ] && grep -q "differs from the tokens" "$tmp/e.err" && ok "different text refused" || bad "different text: $(cat "$tmp/e.err")"

# ---- flags and files ----
expect() { # code what args...
    code=$1 what=$2; shift 2
    P "$@" >"$tmp/x.out" 2>"$tmp/x.err"; rc=$?
    if [ "$rc" -eq "$code" ] && [ -s "$tmp/x.err" ] && [ ! -s "$tmp/x.out" ]; then ok "$what"
    else bad "$what: exit $rc (want $code): $(head -n 2 "$tmp/x.err")"; fi
}
M="-m $tmp/m.gguf"
expect 2 "no model" -f "$tmp/text.txt"
expect 2 "no text" $M
expect 2 "unknown flag" $M -f "$tmp/text.txt" --bogus
expect 2 "-c 2" $M -f "$tmp/text.txt" -c 2
expect 2 "-c nan" $M -f "$tmp/text.txt" -c nan
expect 2 "-c negative" $M -f "$tmp/text.txt" -c -512
expect 2 "--chunks 0" $M -f "$tmp/text.txt" --chunks 0
expect 2 "-t -1" $M -f "$tmp/text.txt" -t -1
expect 2 "--kl-divergence without a base" $M -f "$tmp/text.txt" --kl-divergence
expect 2 "--kl-top-k 0" $M -f "$tmp/text.txt" --kl-divergence-base "$tmp/z.kld" --kl-top-k 0
expect 2 "--kl-sketch -1" $M -f "$tmp/text.txt" --kl-divergence-base "$tmp/z.kld" --kl-sketch -1
expect 2 "-c differs from the base" $M -c 256 --kl-divergence-base "$tmp/base.kld" --kl-divergence
expect 2 "bad cache type" $M -f "$tmp/text.txt" -ctk q4_0
expect 1 "missing text file" $M -f "$tmp/none.txt"
expect 1 "text too short" $M -f "$tmp/short.txt" -c 128
expect 1 "missing model" -m "$tmp/none.gguf" -f "$tmp/text.txt"
expect 1 "missing base file" $M --kl-divergence-base "$tmp/none.kld" --kl-divergence
[ ! -e "$tmp/z.kld" ] && ok "no base file left by a failed run" || bad "a failed run left $tmp/z.kld"
P -m "$tmp/m.gguf" -f "$tmp/short.txt" -c 128 --kl-divergence-base "$tmp/z2.kld" >/dev/null 2>&1
[ ! -e "$tmp/z2.kld" ] && ok "no base file for a too-short text" || bad "a too-short text left a base file"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
