#!/bin/sh
# oracle_kern.sh - our AVX2 kernels against llama.cpp's own CPU kernels, bit for bit.
#
# build/g4-ggml-kern (tools/g4-ggml-kern.c) loads the prebuilt libggml-cpu-haswell.so of
# node-llama-cpp (the backend llama.cpp uses on this AVX2 machine) and checks, per weight type
# and row length up to 48 super-blocks: our dequantization and activation quantizers give the
# same bytes as ggml's, and our matmul gives the same float as ggml's vec_dot (or, for Q4_0,
# IQ4_NL and Q4_K, which llama.cpp repacks, its repacked kernels' order; Q4_K against ggml's
# exported gemv/gemm on weights repacked to its q4_K_8x8 layout); and F32/F16/BF16 weights
# through a one-op ggml graph in the plain CPU buffer (vec_dot for one column, tinyBLAS for
# 2-5 columns when rows % 4 == 0 and n % 8 == 0, else vec_dot), 12 and 11 rows, n 8..6144.
# Skipped without tests/oracle/node_modules (make test-deps), on non-x86-64 or without AVX2.
B=${B:-build}
LIBDIR=tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
if [ ! -f "$LIBDIR/libggml-cpu-haswell.so" ] || [ ! -x "$B/g4-ggml-kern" ] || ! grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
    echo "oracle_kern: skipped (needs make test-deps, $B/g4-ggml-kern and an AVX2 CPU)"
    echo "0 passed, 0 failed"
    exit 0
fi
out=$("$B/g4-ggml-kern" "$LIBDIR" avx2 2>&1)
rc=$?
printf '%s\n' "$out" | grep -v "passed, .* failed" >&2
line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
if [ -z "$line" ]; then echo "FAIL oracle_kern: no result (exit $rc)" >&2; echo "0 passed, 1 failed"; exit 1; fi
echo "$line"
[ "$rc" -eq 0 ]
