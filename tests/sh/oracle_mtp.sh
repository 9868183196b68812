#!/bin/sh
# oracle_mtp.sh - the Gemma 4 assistant (MTP draft model) against llama.cpp v0.5.0:
# tests/oracle/llama_mtp.c (the npm package's libllama, haswell CPU library pinned; the draft
# context is an LLAMA_CONTEXT_TYPE_MTP context with the target context as ctx_other, wired as
# common/speculative.cpp's draft-mtp does) and tools/g4-mtprun.c (the same schedule through
# gemma4.c, G4_ISA=avx2: the pair whose kernels are bit-identical). A prompt through the
# target, then a chain of draft steps from its hidden state; compared bit for bit: the
# target's post-final-norm hidden state, every draft step's logits and next hidden state,
# and the greedy tokens. Random target + assistant pairs written by g4-mkmodel: weight types
# F32/F16/Q8_0/Q4_0/Q4_K/Q6_K and the Q4_K_M mix, KV heads per layer (sliding 2, full 1),
# untied heads, F16 and F32 KV caches, prompts inside and past the sliding window (8).
# Needs node-llama-cpp (make test-deps), git, an x86-64 CPU with AVX2; else "skipped".
# Env: B, KEEP=1, VERBOSE=1.
B=${B:-build}
. tests/sh/oracle_pin.inc
BINS=$ORACLE_LIBDIR
BUNDLE=$ORACLE_NM/node-llama-cpp/llama/gitRelease.bundle
SRC=${LLAMA_SRC:-$B/llama-src}
skip() { echo "oracle_mtp: skipped ($1)"; echo "0 passed, 0 failed"; exit 0; }
[ -f "$BINS/libllama.v0.5.0.so" ] && [ -f "$BUNDLE" ] || skip "no node-llama-cpp; run make test-deps"
command -v git >/dev/null 2>&1 || skip "no git"
case "$(${CC:-cc} -dumpmachine 2>/dev/null)" in x86_64*|amd64*) ;; *) skip "not x86-64";; esac
oracle_pin_cpu || skip "the pinned pair g4 avx2 / llama.cpp haswell needs x86-64 with AVX2, FMA, F16C, BMI2"
[ -x "$B/g4-mtprun" ] && [ -x "$B/g4-mkmodel" ] || { echo "oracle_mtp: $B/g4-mtprun or g4-mkmodel missing (run make)"; echo "0 passed, 1 failed"; exit 1; }

oracle_harness llama_mtp; rc=$?
[ $rc -eq 2 ] && skip "could not check out llama.h from the bundle"
[ $rc -eq 0 ] || { echo "oracle_mtp: cannot build llama_mtp: $HARNESS_ERR"; echo "0 passed, 1 failed"; exit 1; }
LM=$HARNESS

tmp=$(mktemp -d)
[ -n "$KEEP" ] && echo "oracle_mtp: files in $tmp" >&2
[ -z "$KEEP" ] && trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); [ -n "$VERBOSE" ] && echo "ok   $*"; return 0; }
bad() { fail=$((fail + 1)); echo "FAIL $*" >&2; }

P12=2,300,301,302,303,310,45,99,300,301,302,303
P40=2,17,33,45,99,100,101,102,103,104,105,106,260,261,300,301,302,303,310,311,2,17,33,45,99,100,101,102,103,104,105,106,260,261,300,301,302,303,310,311
STEPS=5
D256="--embd 256 --heads 4 --head-dim 64 --head-dim-full 128 --ff 512 --ple 256 --asst-embd 512 --asst-ff 256"

# run NAME KV MKMODEL-ARGS...: the pair, then both prompts
run() {
    name=$1 kv=$2
    shift 2
    t=$tmp/$name.t.gguf a=$tmp/$name.a.gguf
    if ! "$B/g4-mkmodel" "$t" "$@" >/dev/null 2>"$tmp/$name.mk.err" || ! "$B/g4-mkmodel" "$a" "$@" --assistant >/dev/null 2>>"$tmp/$name.mk.err"; then
        bad "$name: g4-mkmodel $*: $(tail -n 1 "$tmp/$name.mk.err")"; return
    fi
    for p in P12 P40; do
        eval ids=\$$p
        r=$tmp/$name.$p.ref g=$tmp/$name.$p.g4
        if ! "$LM" "$BINS/libggml-cpu-haswell.so" "$t" "$a" "$ids" $STEPS "$r" --kv "$kv" >"$r.ids" 2>"$r.err"; then
            bad "$name $p kv $kv: llama.cpp failed: $(grep -v '^llama_\|^load\|^print_info\|^\.' "$r.err" | tail -n 1)"; continue
        fi
        if ! G4_ISA=avx2 "$B/g4-mtprun" -m "$t" -a "$a" -p "$ids" -k $STEPS -o "$g" --kv "$kv" >"$g.ids" 2>"$g.err"; then
            bad "$name $p kv $kv: g4-mtprun failed: $(tail -n 1 "$g.err")"; continue
        fi
        if cmp -s "$r.ids" "$g.ids"; then ok "$name $p kv $kv tokens"
        else bad "$name $p kv $kv: greedy tokens differ: llama.cpp $(cat "$r.ids") g4 $(cat "$g.ids")"; fi
        for f in h0 logits h; do
            if cmp -s "$r.$f.f32" "$g.$f.f32"; then ok "$name $p kv $kv $f"
            else
                line=$(command -v node >/dev/null 2>&1 && node tests/oracle/oracle.mjs cmp "$r.$f.f32" "$g.$f.f32" 2>/dev/null)
                bad "$name $p kv $kv: $f not bit-identical ($line)"
            fi
        done
    done
}
run f32      f16
run f32_kv   f32
run f16      f16 --type f16
run q8_0     f16 --type q8_0 --ple 32
run q4_0     f32 --type q4_0 --ple 32
run q4_k     f16 $D256 --type q4_k
run q6_k     f32 $D256 --type q6_k
run q4_k_m   f16 $D256 --q4_k_m
run gqa      f16 --heads 4 --kv-heads 2 --kv-heads-full 1 --ff-shared 256 --asst-heads 2
run untied   f32 --untied --k-eq-v --ple 0 --shared 0

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
