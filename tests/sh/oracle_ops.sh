#!/bin/sh
# oracle_ops.sh - the forward pass's float ops (RMS norm, RoPE, softmax, GELU, soft-cap) bit
# for bit against ggml: build/g4-ggml-ops runs each op through llama.cpp's own CPU backend
# (node-llama-cpp 3.22.1's prebuilt libggml-base.so + libggml-cpu-haswell.so, dlopen'ed) and
# through gemma4.c's functions on random inputs of Gemma 4 shapes. Any 1-ulp difference fails:
# downstream 8-bit activation roundings turn it into NMSE 1e-4 .. 4e-3 (oracle_forward.sh).
# Needs tests/oracle/node_modules (make test-deps) and an x86-64 host with AVX2 and FMA (the
# haswell variant is the reference: llama.cpp loads it on such hosts); else "skipped".
# Env: B (build dir), G4_OPS_CPU (another libggml-cpu-*.so of the same directory).
B=${B:-build}
LIBS=tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
CPU=${G4_OPS_CPU:-libggml-cpu-haswell.so}

skip() { echo "oracle_ops: skipped ($1)"; echo "0 passed, 0 failed"; exit 0; }
[ -f "$LIBS/libggml-base.so" ] && [ -f "$LIBS/$CPU" ] || skip "no $LIBS/$CPU; run make test-deps"
[ "$(uname -m)" = x86_64 ] || skip "not x86-64"
grep -q '\bavx2\b' /proc/cpuinfo 2>/dev/null && grep -q '\bfma\b' /proc/cpuinfo 2>/dev/null || skip "no AVX2+FMA"
if [ ! -x "$B/g4-ggml-ops" ]; then
    echo "oracle_ops: $B/g4-ggml-ops missing (run make)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
out=$("$B/g4-ggml-ops" "$LIBS" "$CPU")
rc=$?
printf '%s\n' "$out" | grep -v '^[0-9]* passed, [0-9]* failed' | grep -v '^ok ' >&2
[ -n "$VERBOSE" ] && printf '%s\n' "$out" | grep '^ok ' >&2
line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
[ -n "$line" ] || line="0 passed, 1 failed"
echo "$line"
[ "$rc" -eq 0 ]
