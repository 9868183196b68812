#!/bin/sh
# oracle_batch.sh - batched decoding against llama.cpp v0.5.0 decoding the same sequences
# together: tests/oracle/llama_batch.c (several sequence ids in one llama_batch, a KV cache per
# sequence, flash attention off; built here against llama.h from the llama.cpp tree inside
# node-llama-cpp and the npm package's prebuilt libllama, CPU backend pinned to its haswell
# library) and tools/g4-batchrun.c (the same schedule through g4_batch_eval, g4's avx2 table:
# the pair whose kernels are bit-identical, tests/sh/oracle_kern.sh). Every output of every
# step is compared: identical greedy tokens, and the logits' NMSE over all outputs must be 0
# (they are the same float operations in the same order). Schedules mix prompts of different
# lengths (llama.cpp splits them into equal ubatches), decoding at different positions, a
# session that stops while the others go on, sliding windows that wrap (window 8), and g4's
# chunking is varied (-ub/--out/--sub), which must not change a bit; also on mixture-of-
# experts models (26B-A4B layout). Then single-sequence
# decode steps over the model variants of oracle_forward.sh (every weight type, the Q4_K_M
# mix tied and untied, F32/F16 KV, several seeds), also gated at NMSE 0 and equal tokens.
# The pair it gates on is named and pinned on every host (tests/sh/oracle_pin.inc): g4's avx2
# table (G4_ISA=avx2) against llama.cpp's haswell CPU library, loaded by name (llama.cpp's log
# must say it loaded that library). Where the default pair differs (an AVX-512 host: g4's
# avx512 table, llama.cpp's zen4 or skylakex ... library) the same schedules run on that pair
# too, with g4's default chunking only: gated for g4 avx512 / llama.cpp zen4 (bit for bit
# there), reported for other pairs (oracle_pin.inc oracle_default_gated); not under the
# sanitizers.
# Stdout: "pair: ..." (the gated result), maybe "report: ...", then "N passed, M failed".
# Needs node-llama-cpp (make test-deps), git, an x86-64 CPU with AVX2, FMA, F16C, BMI2; else
# "skipped".
# Env: B, KEEP=1, VERBOSE=1, G4_SANITIZED=1 (fewer decode cases), G4_ORACLE_PAIR="TABLE VARIANT"
# (see oracle_pin.inc).
B=${B:-build}
. tests/sh/oracle_pin.inc
BINS=$ORACLE_LIBDIR
BUNDLE=$ORACLE_NM/node-llama-cpp/llama/gitRelease.bundle
SRC=${LLAMA_SRC:-$B/llama-src}
skip() { echo "oracle_batch: skipped ($1)"; echo "0 passed, 0 failed"; exit 0; }
[ -f "$BINS/libllama.v0.5.0.so" ] && [ -f "$BUNDLE" ] || skip "no node-llama-cpp; run make test-deps"
command -v git >/dev/null 2>&1 || skip "no git"
command -v node >/dev/null 2>&1 || skip "no node"
case "$(${CC:-cc} -dumpmachine 2>/dev/null)" in x86_64*|amd64*) ;; *) skip "not x86-64";; esac
oracle_pin_cpu || skip "the pinned pair g4 avx2 / llama.cpp haswell needs x86-64 with AVX2, FMA, F16C, BMI2"
[ -x "$B/g4-batchrun" ] && [ -x "$B/g4-mkmodel" ] && [ -x "$B/g4-oracle-pair" ] || {
    echo "oracle_batch: $B/g4-batchrun, g4-mkmodel or g4-oracle-pair missing (run make)"; echo "0 passed, 1 failed"; exit 1; }

oracle_harness llama_batch; rc=$?
[ $rc -eq 2 ] && skip "could not check out llama.h from the bundle"
[ $rc -eq 0 ] || { echo "oracle_batch: cannot build llama_batch: $HARNESS_ERR"; echo "0 passed, 1 failed"; exit 1; }
LB=$HARNESS

tmp=$(mktemp -d)
[ -n "$KEEP" ] && echo "oracle_batch: files in $tmp" >&2
[ -z "$KEEP" ] && trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
rpass=0
rfail=0
ok() { pass=$((pass + 1)); [ -n "$VERBOSE" ] && echo "ok   $*"; return 0; }
bad() { fail=$((fail + 1)); echo "FAIL $*" >&2; }
oracle_default_pair
REPORT=0
oracle_default_gate_init # the default pair's checks: rok / rbad (oracle_pin.inc)
oracle_default_differs && [ "$DEF_LL" != - ] && [ -z "$G4_SANITIZED" ] && REPORT=1
PIN_LIB=libggml-cpu-haswell.so
PIN_SEEN=0

# Three sequences: prompts of 20, 3 and 12 tokens (window 8: the rings wrap), 6 steps
# together, then uneven chunks (2, 1 and 3 tokens: three ubatches in llama.cpp), 4 steps of
# sequences 0 and 1 only (2 has stopped), 3 more steps of all three.
cat >"$tmp/s3" <<'EOF'
seqs 3
eval 0:2,17,33,45,99,100,101,102,103,104,105,106,260,261,300,301,302,303,310,311 1:2,45,99 2:2,300,301,302,303,310,311,320,321,330,331,340
gen 6
eval 0:260,261 1:300 2:17,33,45
gen 4 0,1
gen 3
EOF
# Five sequences decoding one token each at different depths (a ubatch of 5 columns: for
# Q4_K, 4 in its 4-column gemm order and 1 in its gemv order), sequence 0 stopping first.
{
    echo "seqs 5"
    echo "eval 0:2,17,33 1:2,45,99,100,101,102,103,104,105,106 2:2 3:2,300,301,302,303,310,311,320,321,330,331,340,341,350,351 4:2,7,9,11,13"
    echo "gen 8"
    echo "gen 4 1,2,3,4"
} >"$tmp/s5"

D32="--ple 32"
D256="--embd 256 --heads 4 --head-dim 64 --head-dim-full 128 --ff 512 --ff-shared 768 --ple 256"
# run NAME KV SCHEDULE MKMODEL-ARGS...   (ONE=1: g4's default chunking only; under the
# sanitizers (G4_SANITIZED) the decode cases whose names are not in QUICK are left out: writing
# their K-quant models takes about 3 s each there, and the plain run covers their numbers)
QUICK="f32 f16 bf16 q8_0 q4_0 q4_k_m no_ple untied gqa_kv k_eq_v shared_kv_t no_scale"
run() {
    name=$1 kv=$2 sch=$3
    shift 3
    if [ -n "$ONE" ] && [ -n "$G4_SANITIZED" ]; then case " $QUICK " in *" $name "*) ;; *) return 0 ;; esac; fi
    m=$tmp/$name.gguf
    [ -f "$m" ] || "$B/g4-mkmodel" "$m" "$@" >/dev/null 2>"$tmp/$name.mk.err" || { bad "$name: g4-mkmodel $*"; return; }
    run_pair pin "$PIN_LIB" avx2 ok bad
    [ "$REPORT" = 1 ] && run_pair def "libggml-cpu-$DEF_LL.so" "$DEF_G4" rok rbad
    return 0
}
# run_pair pin|def LIB ISA OK BAD: llama.cpp on LIB, g4 on table ISA (pin: three chunkings, the
# library llama.cpp loaded checked once; def: g4's default chunking only)
run_pair() {
    r=$tmp/$name.$sch.$kv.$1
    "$LB" "$BINS/$2" "$m" "$tmp/$sch" "$r.ref.f32" --kv "$kv" >"$r.ref.ids" 2>"$r.ref.err" || {
        $5 "$name $sch kv $kv: llama.cpp ($2) failed: $(tail -n 1 "$r.ref.err")"; return; }
    if [ "$1" = pin ] && [ "$PIN_SEEN" = 0 ]; then
        PIN_SEEN=1
        if grep -q "loaded CPU backend from .*/$PIN_LIB\$" "$r.ref.err"; then ok "llama.cpp pinned to haswell"
        else bad "the pinned llama.cpp did not log loading $PIN_LIB: $(grep 'loaded .* backend' "$r.ref.err" | head -n 1)"; fi
    fi
    for opt in "" "-ub 3 --out 1 --sub 2" "-ub 16 --out 2 -t 2"; do
        # shellcheck disable=SC2086
        if ! G4_ISA=$3 "$B/g4-batchrun" -m "$m" -s "$tmp/$sch" -o "$tmp/g4.f32" --kv "$kv" $opt >"$tmp/g4.ids" 2>"$tmp/g4.err"; then
            $5 "$name $sch kv $kv [$opt]: g4-batchrun ($3) failed: $(tail -n 1 "$tmp/g4.err")"; continue
        fi
        if cmp -s "$r.ref.ids" "$tmp/g4.ids"; then $4 "$name $sch kv $kv [$opt] tokens"
        else $5 "$name $sch kv $kv [$opt]: tokens differ: llama.cpp $(tr '\n' '|' <"$r.ref.ids") g4 $(tr '\n' '|' <"$tmp/g4.ids")"; fi
        line=$(node tests/oracle/oracle.mjs cmp "$r.ref.f32" "$tmp/g4.f32")
        nmse=$(printf '%s\n' "$line" | sed -E 's/^nmse=([^ ]+).*/\1/')
        [ -n "$VERBOSE" ] && echo "oracle_batch: $1 $name $sch kv $kv [$opt]: $line" >&2
        if [ "$nmse" = "0.000e+0" ]; then $4 "$name $sch kv $kv [$opt] nmse"
        else $5 "$name $sch kv $kv [$opt]: logits NMSE $nmse over all outputs, expected 0"; fi
        if [ -n "$ONE" ] || [ "$1" = def ]; then break; fi
    done
}
run f32      f32 s3
run f32      f16 s5
run f16      f32 s5 --type f16
run q8_0     f32 s3 $D32 --type q8_0
run q4_0     f32 s5 $D32 --type q4_0
run q4_k     f32 s3 $D256 --type q4_k
run q4_k     f16 s5 $D256 --type q4_k
run q6_k     f32 s5 $D256 --type q6_k
run iq4_xs   f32 s5 $D256 --type iq4_xs
run no_ple   f32 s5 --ple 0 --shared 0
run gqa_kv   f16 s3 --heads 4 --kv-heads 2 --kv-heads-full 1 --ff-shared 256
run k_eq_v   f32 s5 --k-eq-v --untied
# deep: a 4,200-token prompt next to a 300-token one, then decoding together past position
# 4,096 (the full layers attend to every cell; with 2 threads g4 spreads each phase of the
# decode step over the pool)
awk 'BEGIN { s = 5; printf "seqs 2\neval 0:2"; for (i = 1; i < 4200; i++) { s = (s * 48271) % 2147483647;
     printf ",%d", 16 + s % 480 } printf " 1:2"; for (i = 1; i < 300; i++) { s = (s * 48271) % 2147483647;
     printf ",%d", 16 + s % 480 } print "\ngen 4" }' >"$tmp/sdeep"
run deep     f16 sdeep --ctx 8192
# an LM head of 510 rows (tinyBLAS needs rows % 4 == 0: llama.cpp takes vec_dot for every
# column), tied F32 and untied F16, over 5 sequences
run v510     f32 s5 --vocab 510
run v510_f16 f32 s5 --vocab 510 --type f16 --untied
# mixture of experts (26B-A4B layout: no PLE, no KV sharing, K = V on full layers, KV head
# arrays): the sequences' rows routed and grouped by expert together (llama.cpp's
# mul_mat_id over the ubatch); F32 fused, Q8_0 split with per-expert scales and F16 KV, Q4_K
# (under the sanitizers only the first: ONE there, and the others are not in QUICK)
M26="--layers 6 --full-every 6 --shared 0 --ple 0 --k-eq-v-full --heads 4 --kv-heads 2 --kv-heads-full 1"
run moe_f32  f32 s3 $M26 --experts 32 --experts-used 4 --ff-exp 64
ONE=${G4_SANITIZED:+1}
run moe_q8_0 f16 s5 $M26 --type q8_0 --experts 16 --experts-used 4 --ff-exp 64 --moe-split --moe-scales --seed 2
run moe_q4_k f32 s5 $M26 --embd 256 --head-dim 64 --head-dim-full 128 --ff 512 --type q4_k --experts 32 --experts-used 4 --ff-exp 256
ONE=

# Decode steps of one sequence (one token per llama_decode after a prompt), over the model
# variants of oracle_forward.sh: every weight type, the Q4_K_M-like mix (Q4_K/Q6_K matrices,
# Q6_K token_embd, Q5_K per_layer_token_embd, BF16 per_layer_model_proj, F32 PLE gates) tied
# and untied, several seeds, F32 and F16 KV. d1: a 12-token prompt (the window of 8 wraps),
# 8 greedy steps, a 3-token chunk, 4 more steps (14 outputs); dlong: a 300-token prompt, then
# decoding against 300+ cells on the full layers; d8k: prompt ids spread over a vocabulary of
# 8192. Every output's logits must be identical (NMSE 0) and the tokens equal.
printf 'seqs 1\neval 0:2,17,33,45,99,100,101,102,103,104,105,106\ngen 8\neval 0:260,261,300\ngen 4\n' >"$tmp/d1"
awk 'BEGIN { s = 11; printf "seqs 1\neval 0:2"; for (i = 1; i < 300; i++) { s = (s * 48271) % 2147483647;
     printf ",%d", 16 + s % 480 } print "\ngen 6\neval 0:20,21,22,23,24\ngen 3" }' >"$tmp/dlong"
awk 'BEGIN { s = 7; printf "seqs 1\neval 0:2"; for (i = 1; i < 40; i++) { s = (s * 48271) % 2147483647;
     printf ",%d", 16 + s % 8000 } print "\ngen 10" }' >"$tmp/d8k"
ONE=1
run f32         f32 d1
run f32         f16 dlong
run f16         f32 d1 --type f16
run bf16        f32 d1 --type bf16
run bf16        f16 dlong --type bf16
run q8_0        f32 d1 $D32 --type q8_0
run q4_0        f32 d1 $D32 --type q4_0
run q4_1        f32 d1 $D32 --type q4_1
run q5_0        f32 d1 $D32 --type q5_0
run q5_1        f32 d1 $D32 --type q5_1
run iq4_nl      f32 d1 $D32 --type iq4_nl
run q2_k        f32 d1 $D256 --type q2_k
run q3_k        f32 d1 $D256 --type q3_k
run q4_k        f32 d1 $D256 --type q4_k
run q4_k        f16 d1 $D256 --type q4_k
run q4_k_s3     f32 d1 $D256 --type q4_k --seed 3
run q5_k        f32 d1 $D256 --type q5_k
run q5_k_s2     f32 d1 $D256 --type q5_k --seed 2
run q5_k_v8k    f32 d8k $D256 --type q5_k --vocab 8192
run q6_k        f32 d1 $D256 --type q6_k
run q6_k_s4     f32 d1 $D256 --type q6_k --seed 4
run iq4_xs      f32 d1 $D256 --type iq4_xs
run iq4_xs_s2   f32 d1 $D256 --type iq4_xs --seed 2
run q4_k_m      f32 d1 --q4_k_m $D256
run q4_k_m      f16 d1 --q4_k_m $D256
run q4_k_m      f16 dlong --q4_k_m $D256
run q4_k_m_s2   f32 d1 --q4_k_m $D256 --seed 2
run q4_k_m_s3   f16 d1 --q4_k_m $D256 --seed 3
run q4_k_m_u    f32 d1 --q4_k_m --untied $D256
run q4_k_m_u    f16 d1 --q4_k_m --untied $D256
run q4_k_m_gu   f32 d1 --q4_k_m --untied --kv-heads 2 $D256 --seed 4
run kv_f16_q4_k f16 d1 --type q4_k --untied --kv-heads 2 $D256
run no_ple      f32 d1 --ple 0 --shared 0
run untied      f32 d1 --untied
run gqa_kv      f16 d1 --heads 4 --kv-heads 2 --kv-heads-full 1 --ff-shared 256
run k_eq_v      f32 d1 --k-eq-v --untied
run shared_kv_t f32 d1 --shared-kv-tensors
run no_scale    f32 d1 --no-layer-scale --softcap 0
ONE=

echo "pair: g4 avx2 / llama.cpp $PIN_LIB (loaded by name): $pass passed, $fail failed"
if [ "$REPORT" = 1 ]; then
    oracle_default_line "libggml-cpu-$DEF_LL.so"
    [ "$GATE" = 1 ] && pass=$((pass + rpass)) fail=$((fail + rfail))
elif oracle_default_differs; then
    echo "report: default pair g4 $DEF_G4 / llama.cpp $DEF_LL not run (under the sanitizers, or no variant found)"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
