#!/bin/sh
# bench_spec.sh - `make bench-spec`: what speculative decoding costs and gains, g4 next to native
# llama.cpp, on a random E2B-shaped Q4_K_M target and an assistant written for it.
#  1. the cost curve (acceptance-free): `g4 bench --verify 1..8 -md ASSISTANT`: one decode step,
#     verifying k tokens in one pass, one draft step; medians, ratio to the decode step;
#  2. side by side, alternating rounds: `g4 run` and llama.cpp's examples/speculative-simple
#     (built here from LLAMA_SRC against the native build's libllama / libllama-common in
#     LLAMA_BIN, into BUILD_DIR; never committed) with the same drafter rule, file, prompt,
#     greedy sampling and thread count: ngram-simple (size n 2, m 8), draft-mtp (n_max 3), and a
#     no-draft baseline (ngram-simple with a lookup longer than the context: every step
#     verifies one token, i.e. plain decoding through the same loop). Greedy tokens are the
#     same in both engines, so the drafts and acceptances are too (printed to check).
# Random weights make acceptance meaningless in absolute terms: read the tokens/s ratio at
# equal acceptance, and the cost curve. A benchmark, not a test: run it on a quiet machine.
# LOOP=1: the target is an E2B-shaped Q4_K_M script-loop device instead (g4-mkmodel --script
# TEXT --script-loop: it repeats TEXT forever with wide margins, so both engines decode the
# same tokens whatever their batch float orders, and ngram-simple's drafts are right from the
# second round on): acceptance that is high and equal in both engines, by construction.
#   sh scripts/bench_spec.sh [BUILD_DIR] [MODEL] [ASSISTANT] [ROUNDS]
# Env: THREADS (2), N (generated tokens, 64), LLAMA_SRC (/work/llama/src), LLAMA_BIN
# (/work/llama/build/bin), PROMPT, LOOP.
B=${1:-build}
LOOP_TEXT="The quick brown fox jumps over the lazy dog; 0123456789."
if [ "${LOOP:-0}" = 1 ]; then
    M=${2:-$B/bench-e2b-loop.gguf}
    A=${3:-$B/bench-e2b-loop-assistant.gguf}
    PROMPT=${PROMPT:-"Say it again
"}
    [ -f "$M" ] || "$B/g4-mkmodel" "$M" --e2b --q4_k_m --fast --script "$LOOP_TEXT" --script-loop
    [ -f "$A" ] || "$B/g4-mkmodel" "$A" --e2b --q4_k_m --fast --script "$LOOP_TEXT" --script-loop --assistant
else
    M=${2:-$B/bench-e2b-q4_k_m.gguf}
    A=${3:-$B/bench-e2b-assistant.gguf}
fi
ROUNDS=${4:-3}
T=${THREADS:-2}
N=${N:-64}
LLAMA_SRC=${LLAMA_SRC:-/work/llama/src}
LLAMA_BIN=${LLAMA_BIN:-/work/llama/build/bin}
PROMPT=${PROMPT:-"the quick brown fox jumps over the lazy dog. the quick brown fox jumps over the lazy dog. the quick brown fox"}
set -e
[ -f "$M" ] || "$B/g4-mkmodel" "$M" --e2b --q4_k_m --fast
[ -f "$A" ] || "$B/g4-mkmodel" "$A" --e2b --q4_k_m --fast --assistant
out="$B/bench-spec"; rm -rf "$out"; mkdir -p "$out"
LS=$B/llama-speculative-simple
if [ ! -x "$LS" ]; then
    echo "building $LS from $LLAMA_SRC against $LLAMA_BIN" >&2
    ${CXX:-c++} -std=c++17 -O2 -I"$LLAMA_SRC/common" -I"$LLAMA_SRC/include" -I"$LLAMA_SRC/ggml/include" -I"$LLAMA_SRC/vendor" \
        "$LLAMA_SRC/examples/speculative-simple/speculative-simple.cpp" -o "$LS" \
        -L"$LLAMA_BIN" -l:libllama-common.so -l:libllama.so -l:libggml.so -l:libggml-base.so -Wl,-rpath,"$LLAMA_BIN"
fi
echo "model $M, assistant $A, $T threads, -n $N, $ROUNDS alternating rounds" >&2
cat "$M" "$A" >/dev/null # page both files in once

echo "cost curve (g4 bench --verify)" >&2
"$B/g4" bench -m "$M" --verify 1,2,3,4,5,6,7,8 -md "$A" -t "$T" -r 7 -d 256 >"$out/curve.md"

# CONFIG NAME: g4 flags | llama.cpp flags
cfg_g4() {
    case $1 in
    none) echo "--spec-type ngram-simple --spec-ngram-simple-size-n 1024 --spec-ngram-simple-size-m 1" ;;
    ngram) echo "--spec-type ngram-simple --spec-ngram-simple-size-n 2 --spec-ngram-simple-size-m 8" ;;
    mtp) echo "--spec-type draft-mtp -md $A --spec-draft-n-max 3" ;;
    esac
}
cfg_ll() {
    case $1 in
    none) echo "--spec-type ngram-simple --spec-ngram-simple-size-n 1024 --spec-ngram-simple-size-m 1" ;;
    ngram) echo "--spec-type ngram-simple --spec-ngram-simple-size-n 2 --spec-ngram-simple-size-m 8" ;;
    mtp) echo "--spec-type draft-mtp -md $A --spec-draft-n-max 3" ;;
    esac
}
r=1
while [ "$r" -le "$ROUNDS" ]; do
    for c in none ngram mtp; do
        echo "round $r: $c: g4" >&2
        # shellcheck disable=SC2046
        "$B/g4" run -m "$M" -p "$PROMPT" -n "$N" --temp 0 -t "$T" -c 2048 -v $(cfg_g4 $c) \
            >"$out/g4-$c-$r.txt" 2>"$out/g4-$c-$r.err" || echo "g4 $c failed: $(tail -n 1 "$out/g4-$c-$r.err")" >&2
        echo "round $r: $c: llama.cpp" >&2
        # shellcheck disable=SC2046
        "$LS" -m "$M" -p "$PROMPT" -n "$N" --temp 0 -t "$T" -tb "$T" -c 2048 -fa off $(cfg_ll $c) \
            >"$out/ll-$c-$r.txt" 2>"$out/ll-$c-$r.err" || echo "llama.cpp $c failed: $(tail -n 1 "$out/ll-$c-$r.err")" >&2
    done
    r=$((r + 1))
done

cat "$out/curve.md"
echo
# the speed model the curve implies (a model, not a measurement): with each drafted token
# accepted with probability a, a step with k drafts yields (1 - a^(k+1)) / (1 - a) tokens and
# costs verify(k+1) (+ k draft steps for draft-mtp) decode steps; best k per a
awk -F'|' '
    /\| decode / { v[1] = $7 + 0 }
    /\| verify[0-9]+ / { t = $5; gsub(/[^0-9]/, "", t); v[t + 0] = $7 + 0 }
    /\| draft-mtp step / { d = $7 + 0 }
    END {
        print "speedup over plain decoding implied by the curve (model; best number of drafts k in parentheses):"
        print "| acceptance | n-gram drafter (no draft cost) | draft-mtp (k draft steps) |"
        print "|---:|---:|---:|"
        for (ai = 5; ai <= 9; ai++) {
            a = ai / 10; bn = 1; bm = 1; kn = 0; km = 0 # k = 0: no speculation
            for (k = 1; (k + 1) in v; k++) {
                e = (1 - a ^ (k + 1)) / (1 - a)
                sn = e / v[k + 1]; sm = e / (v[k + 1] + k * d)
                if (sn > bn) { bn = sn; kn = k }
                if (sm > bm) { bm = sm; km = k }
            }
            printf "| %.1f | %.2fx (k=%d) | %.2fx (k=%d) |\n", a, bn, kn, bm, km
        }
    }' "$out/curve.md"
echo
echo "| drafter | g4 t/s (median) | llama.cpp t/s (median) | g4 / llama.cpp | g4 drafted / accepted | llama.cpp drafted / accepted | same text |"
echo "|---|---:|---:|---:|---:|---:|---|"
med() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
for c in none ngram mtp; do
    g=$(for f in "$out"/g4-$c-*.err; do sed -n 's/.*generated .* tokens in .* s (\([0-9.]*\) tok\/s).*/\1/p' "$f"; done | med)
    l=$(for f in "$out"/ll-$c-*.err; do sed -n 's/.*decoded .* tokens in .* seconds, speed: *\([0-9.]*\) t\/s.*/\1/p' "$f"; done | med)
    gd=$(sed -n 's/.*drafted \([0-9]*\), accepted \([0-9]*\).*/\1 \/ \2/p' "$out/g4-$c-1.err" | head -n 1)
    ld=$(printf '%s / %s' "$(sed -n 's/.*n_drafted *= *\([0-9]*\).*/\1/p' "$out/ll-$c-1.err" | head -n 1)" \
        "$(sed -n 's/.*n_accept *= *\([0-9]*\).*/\1/p' "$out/ll-$c-1.err" | head -n 1)")
    ratio=$(awk -v a="$g" -v b="$l" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
    # g4 prints what it generated; llama.cpp the prompt, then what it generated (a few tokens
    # past -n when the last draft runs over): same text = g4's inside llama.cpp's
    gt=$(tr -d '\n' <"$out/g4-$c-1.txt")
    lt=$(tr -d '\n' <"$out/ll-$c-1.txt")
    case $lt in *"$gt"*) same=yes ;; *) same=no ;; esac
    [ -n "$gt" ] || same=no
    echo "| $c | $g | $l | $ratio | $gd | $ld | $same |"
done
echo
echo "per round (g4 / llama.cpp t/s):"
for c in none ngram mtp; do
    printf '  %s:' "$c"
    r=1
    while [ "$r" -le "$ROUNDS" ]; do
        printf ' %s/%s' "$(sed -n 's/.*generated .* tokens in .* s (\([0-9.]*\) tok\/s).*/\1/p' "$out/g4-$c-$r.err")" \
            "$(sed -n 's/.*decoded .* tokens in .* seconds, speed: *\([0-9.]*\) t\/s.*/\1/p' "$out/ll-$c-$r.err")"
        r=$((r + 1))
    done
    echo
done
