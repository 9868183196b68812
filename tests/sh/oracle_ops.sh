#!/bin/sh
# oracle_ops.sh - the forward pass's float ops (RMS norm, RoPE, softmax, GELU, soft-cap) bit
# for bit against ggml: build/g4-ggml-ops runs each op through llama.cpp's own CPU backend
# (node-llama-cpp 3.22.1's prebuilt libggml-base.so + libggml-cpu-haswell.so, dlopen'ed by name)
# and through gemma4.c's functions on random inputs of Gemma 4 shapes. Any 1-ulp difference fails:
# downstream 8-bit activation roundings turn it into NMSE 1e-4 .. 4e-3 (oracle_forward.sh).
# The pair (tests/sh/oracle_pin.inc): g4's ops (plain C, and the avx2 table's softmax) against
# the haswell library (what g4's avx2 table pairs with). Where llama.cpp would load another
# library here (an AVX-512 host: zen4, skylakex ...), the ops with g4's default table also run
# against that one: gated for avx512 / zen4, reported for other pairs (oracle_default_gated).
# Needs tests/oracle/node_modules (make test-deps) and an x86-64 host with AVX2 and FMA (the
# haswell variant is the reference: llama.cpp loads it on such hosts); else "skipped".
# Stdout: "pair: ...", maybe "report: ...", "N passed, M failed".
# Env: B (build dir), G4_OPS_CPU (another libggml-cpu-*.so of the same directory to gate on).
B=${B:-build}
. tests/sh/oracle_pin.inc
LIBS=$ORACLE_LIBDIR
CPU=${G4_OPS_CPU:-libggml-cpu-haswell.so}

skip() { echo "oracle_ops: skipped ($1)"; echo "0 passed, 0 failed"; exit 0; }
[ -f "$LIBS/libggml-base.so" ] && [ -f "$LIBS/$CPU" ] || skip "no $LIBS/$CPU; run make test-deps"
oracle_pin_cpu || skip "needs x86-64 with AVX2, FMA, F16C, BMI2"
if [ ! -x "$B/g4-ggml-ops" ]; then
    echo "oracle_ops: $B/g4-ggml-ops missing (run make)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
out=$(G4_ISA=avx2 "$B/g4-ggml-ops" "$LIBS" "$CPU") # the pinned pair: the avx2 table's ops (softmax)
rc=$?
printf '%s\n' "$out" | grep -v '^[0-9]* passed, [0-9]* failed' | grep -v '^ok ' >&2
[ -n "$VERBOSE" ] && printf '%s\n' "$out" | grep '^ok ' >&2
line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
[ -n "$line" ] || line="0 passed, 1 failed"
echo "pair: g4 ops / llama.cpp $CPU: $line"

oracle_default_pair
oracle_default_gate_init
if [ "$DEF_LL" != - ] && [ "$DEF_LL" != haswell ] && [ -z "$G4_OPS_CPU" ] && [ -z "$G4_SANITIZED" ]; then
    dout=$(env -u G4_ISA "$B/g4-ggml-ops" "$LIBS" "libggml-cpu-$DEF_LL.so")
    drc=$?
    dline=$(printf '%s\n' "$dout" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    if [ "$GATE" = 1 ]; then
        printf '%s\n' "$dout" | grep '^FAIL' | sed 's/^FAIL/FAIL (default pair)/' >&2
        echo "pair: g4 ops ($DEF_G4 table) / llama.cpp libggml-cpu-$DEF_LL.so: ${dline:-0 passed, 1 failed}"
        [ -n "$dline" ] && [ "$drc" -eq 0 ] || rc=1
        set -- $(printf '%s\n' "$line" | tr -c '0-9\n' ' ') $(printf '%s\n' "${dline:-0 passed, 1 failed}" | tr -c '0-9\n' ' ')
        line="$(($1 + $3)) passed, $(($2 + $4)) failed"
    else
        printf '%s\n' "$dout" | grep '^FAIL' | sed 's/^FAIL/differs (default pair, not gated)/' >&2
        echo "report: default pair g4 ops ($DEF_G4 table) / llama.cpp libggml-cpu-$DEF_LL.so, not gated (this pair not checked on its host): ${dline:-no result}"
    fi
fi
echo "$line"
[ "$rc" -eq 0 ]
