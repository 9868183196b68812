#!/bin/sh
# oracle_forward_neon.sh - the whole forward pass on aarch64 against llama.cpp's arm64 build,
# bit for bit, under qemu-aarch64 -cpu cortex-a76 (NEON, dotprod, fp16: the neon kernel table;
# llama.cpp's libggml-cpu-armv8.2_2.so, loaded alone so ggml cannot pick another variant), and
# again under -cpu max with 128-bit and with 256-bit SVE (the i8mm table, against
# libggml-cpu-armv8.6_1.so).
#
# 1. tools/g4-ggml-ops.c, cross-built against the board build's libg4.a, runs each float op of
#    the forward pass (RMS norm, RoPE, softmax, GELU, soft-cap, the kqv hull rule) through the
#    arm64 libggml and through gemma4.c: every value bitwise equal.
# 2. tests/oracle/llama_forward.c (dlopen of the arm64 libllama.v0.5.0.so) runs a 40-id prompt
#    in one llama_decode and 16 greedy steps on a few of oracle_forward.sh's random models;
#    the board build's static g4 (`make CROSS=aarch64-linux-gnu-`, tests/sh/cross_arm.inc) runs
#    the same ids (`g4 run --ids`, ubatch 16): the 16 tokens and the last prompt position's
#    logits (n_vocab float32) must be identical, byte for byte.
# Needs what oracle_kern_neon.sh needs (gcc-aarch64-linux-gnu, libstdc++6-arm64-cross,
# qemu-user, `make test-deps` for build/arm64-llama); without it, and in the sanitizer run,
# it reports a skip. About 4 minutes of one core (plus the board build, shared with cross_arm.sh).
# Env: B, G4_ARM64_LIBDIR (see oracle_kern_neon.sh), KEEP=1 keeps the temp dir, ONLY=REGEX.
B=${B:-build}
LIBDIR=${G4_ARM64_LIBDIR:-$B/arm64-llama/package/bins/linux-arm64}
CPULIB=libggml-cpu-armv8.2_2.so # and armv8.6_1 for the i8mm table, below
skip() { echo "oracle_forward_neon: skipped ($1)"; echo "0 passed, 0 failed"; exit 0; }
fail() { echo "oracle_forward_neon: $1" >&2; echo "0 passed, 1 failed"; exit 1; }
[ -z "$G4_SANITIZED" ] || skip "sanitizer run"
[ -f "$LIBDIR/libllama.v0.5.0.so" ] && [ -f "$LIBDIR/$CPULIB" ] || skip "no $LIBDIR/libllama.v0.5.0.so: make test-deps"
[ -x "$B/g4-mkmodel" ] || fail "$B/g4-mkmodel missing (run make)"
. tests/sh/cross_arm.inc
for l in libc.so.6 libstdc++.so.6 libgcc_s.so.1; do
    [ -e "$SYSROOT/lib/$l" ] || skip "no $SYSROOT/lib/$l (libstdc++6-arm64-cross)"
done
tmp=$(mktemp -d)
[ -n "$KEEP" ] && echo "oracle_forward_neon: files in $tmp" >&2
[ -z "$KEEP" ] && trap 'rm -rf "$tmp"' EXIT
F="-std=c11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -DG4_BUILD -Iinclude -Isrc"
aarch64-linux-gnu-gcc $F -o "$tmp/llama_forward" tests/oracle/llama_forward.c -ldl || fail "compile llama_forward.c"
aarch64-linux-gnu-gcc $F -o "$tmp/g4-ggml-ops" tools/g4-ggml-ops.c "$XB/libg4.a" -lm -lpthread -ldl || fail "compile g4-ggml-ops.c"
QL() { "$QEMU" -cpu "$QCPU" -L "$SYSROOT" -E LD_LIBRARY_PATH="$LIBDIR" "$@"; }
pass=0 failn=0
ok() { pass=$((pass + 1)); [ -n "$VERBOSE" ] && echo "ok   $*" >&2; return 0; }
bad() { failn=$((failn + 1)); echo "FAIL $*" >&2; }

# 1. the float ops (KNOWN: a pattern of op checks reported, not gated, for this pair)
ops() {
out=$(G4_ISA=$ISA QL "$tmp/g4-ggml-ops" "$LIBDIR" "$CPULIB" 2>&1)
line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
if [ -z "$line" ]; then bad "g4-ggml-ops gave no result: $(printf '%s\n' "$out" | tail -n 1)"; return; fi
kn=0
[ -n "$KNOWN" ] && kn=$(printf '%s\n' "$out" | grep -E '^FAIL' | grep -cE "$KNOWN")
[ -n "$KNOWN" ] && printf '%s\n' "$out" | grep -E '^FAIL' | grep -E "$KNOWN" | sed 's/^FAIL/known difference:/' >&2
printf '%s\n' "$out" | grep -E '^FAIL' | { if [ -n "$KNOWN" ]; then grep -vE "$KNOWN"; else cat; fi; } >&2
pass=$((pass + ${line%% passed*})); n=${line#*passed, }; failn=$((failn + ${n%% failed*} - kn))
}

# 2. the forward pass
PROMPT=2,17,33,45,99,100,101,102,103,104,105,106,260,261,300,301,302,303,310,311,320,321,330,331,340,341,350,351,360,361,370,371,380,381,390,391,400,401,410,411
N=16
D32="--ple 32"
D256="--embd 256 --heads 4 --head-dim 64 --head-dim-full 128 --ff 512 --ff-shared 768 --ple 256"
fwd() {
    name=$1 kv=$2
    shift 2
    if [ -n "$ONLY" ] && ! printf '%s\n' "$name" | grep -Eq "$ONLY"; then return; fi
    if ! "$B/g4-mkmodel" "$tmp/$name.gguf" "$@" >"$tmp/$name.mk" 2>&1; then bad "$name: g4-mkmodel $*"; return; fi
    if ! QL "$tmp/llama_forward" "$LIBDIR" "$CPULIB" "$tmp/$name.gguf" "$PROMPT" $N "$kv" "$tmp/$name.ref.f32" \
            >"$tmp/$name.ref.ids" 2>"$tmp/$name.ref.err"; then
        bad "$name: llama.cpp: $(tail -n 1 "$tmp/$name.ref.err")"; return
    fi
    if ! G4_ISA=$ISA "$QEMU" -cpu "$QCPU" "$XB/g4" run -m "$tmp/$name.gguf" -p "$PROMPT" --ids -n $N --temp 0 -t 1 --ubatch 16 \
            --cache-type "$kv" --dump-logits "$tmp/$name.g4.f32" >"$tmp/$name.g4.ids" 2>"$tmp/$name.g4.err"; then
        bad "$name: g4 run: $(tail -n 1 "$tmp/$name.g4.err")"; return
    fi
    if cmp -s "$tmp/$name.ref.ids" "$tmp/$name.g4.ids"; then ok "$name tokens"
    else bad "$name tokens: llama.cpp $(cat "$tmp/$name.ref.ids"), g4 $(cat "$tmp/$name.g4.ids")"; fi
    if [ -s "$tmp/$name.ref.f32" ] && cmp -s "$tmp/$name.ref.f32" "$tmp/$name.g4.f32"; then ok "$name logits"
    else bad "$name ($*; kv $kv): last-position logits differ from llama.cpp's"; fi
}
models() {
fwd f32      f32
fwd f16      f32 --type f16
fwd bf16     f32 --type bf16
fwd kv_f16   f16
fwd q8_0     f32 --type q8_0 $D32
fwd q4_0     f32 --type q4_0 $D32
fwd iq4_nl   f32 --type iq4_nl $D32
fwd q5_1     f32 --type q5_1 $D32
fwd q4_k_m   f32 --q4_k_m $D256
fwd q3_k     f32 --type q3_k $D256
fwd iq4_xs   f32 --type iq4_xs $D256
fwd kv_f16_q4_k f16 --type q4_k --untied --kv-heads 2 $D256
}

# the neon table against armv8.2_2 on a Cortex-A76; the i8mm table against armv8.6_1 on cores
# with SVE and i8mm, 128-bit (Neoverse N2 / V2) and 256-bit (Neoverse V1) (qemu -cpu max)
for cfg in "cortex-a76 libggml-cpu-armv8.2_2.so neon" "max,sve-default-vector-length=16 libggml-cpu-armv8.6_1.so i8mm" \
           "max,sve-default-vector-length=32 libggml-cpu-armv8.6_1.so i8mm"; do
    set -- $cfg
    QCPU=$1 CPULIB=$2 ISA=$3
    KNOWN=
    [ -f "$LIBDIR/$CPULIB" ] || { bad "no $LIBDIR/$CPULIB"; continue; }
    p0=$pass f0=$failn
    ops
    models
    echo "oracle_forward_neon: $ISA table against $CPULIB (qemu -cpu $QCPU): $((pass - p0)) passed, $((failn - f0)) failed" >&2
done
echo "$pass passed, $failn failed"
[ "$failn" -eq 0 ]
