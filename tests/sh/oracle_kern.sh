#!/bin/sh
# oracle_kern.sh - our AVX2 kernels against llama.cpp's own CPU kernels, bit for bit.
#
# The pair (tests/sh/oracle_pin.inc): g4's avx2 table against llama.cpp's haswell library, on
# every x86-64 host. build/g4-ggml-kern (tools/g4-ggml-kern.c) loads node-llama-cpp's prebuilt
# libggml-cpu-haswell.so by name (the backend llama.cpp uses on an AVX2 machine) and checks, per
# weight type and row length up to 48 super-blocks: our dequantization and activation
# quantizers give the same bytes as ggml's, and our matmul gives the same float as ggml's vec_dot
# (or, for Q4_0, IQ4_NL and Q4_K, which llama.cpp repacks, its repacked kernels' order; Q4_K
# against ggml's exported gemv/gemm on weights repacked to its q4_K_8x8 layout); and F32/F16/BF16
# weights through a one-op ggml graph in the plain CPU buffer (vec_dot for one column, tinyBLAS
# for 2-5 columns when rows % 4 == 0 and n % 8 == 0, else vec_dot), 12 and 11 rows, n 8..6144.
# Where the default pair differs (an AVX-512 host: g4's avx512 table, the library llama.cpp picks
# there, e.g. zen4), the same tool runs on that pair: gated for g4 avx512 / zen4 (also Q2_K
# against ggml's repacked q2_K_8x8 gemv/gemm there, BF16 by vdpbf16ps), reported for others
# (oracle_pin.inc oracle_default_gated). Stdout: "pair: ...", maybe "report: ...", "N passed, M failed".
# Skipped without tests/oracle/node_modules (make test-deps), on non-x86-64 or without AVX2.
B=${B:-build}
. tests/sh/oracle_pin.inc
if [ ! -f "$ORACLE_LIBDIR/libggml-cpu-haswell.so" ] || [ ! -x "$B/g4-ggml-kern" ] || ! oracle_pin_cpu; then
    echo "oracle_kern: skipped (needs make test-deps, $B/g4-ggml-kern and an x86-64 CPU with AVX2, FMA, F16C, BMI2)"
    echo "0 passed, 0 failed"
    exit 0
fi
out=$("$B/g4-ggml-kern" "$ORACLE_LIBDIR" avx2 libggml-cpu-haswell.so 2>&1)
rc=$?
printf '%s\n' "$out" | grep -v "passed, .* failed" >&2
line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
if [ -z "$line" ]; then echo "FAIL oracle_kern: no result (exit $rc)" >&2; echo "0 passed, 1 failed"; exit 1; fi
echo "pair: g4 avx2 / llama.cpp libggml-cpu-haswell.so: $line"

oracle_default_pair
oracle_default_gate_init
# the AVX-512 table has three variants with the same float order (kern_cpu.zmm: the ymm integer
# kernels, G4_ZMM=0; the zmm ones but Q6_K's, the default on Zen 4, h; every zmm one, the default
# on AVX-VNNI CPUs such as Zen 5, 1): all three are checked on any AVX-512 host
zvars=-
[ "$DEF_G4" = avx512 ] && zvars="0 h 1"
if oracle_default_differs && [ "$DEF_LL" != - ] && [ -z "$G4_SANITIZED" ]; then
  for zv in $zvars; do
    if [ "$zv" = - ]; then zname=$DEF_G4
    else zname="$DEF_G4 ($(case $zv in (1) echo zmm;; (h) echo 'zmm but Q6_K ymm';; (*) echo ymm;; esac) integer kernels, G4_ZMM=$zv)"; fi
    dout=$(env -u G4_ISA $( [ "$zv" != - ] && echo "G4_ZMM=$zv" ) "$B/g4-ggml-kern" "$ORACLE_LIBDIR" "$DEF_G4" "libggml-cpu-$DEF_LL.so" 2>&1)
    drc=$?
    if [ "$GATE" = 1 ]; then pre="(default pair)"; else pre="(default pair, not gated)"; fi
    printf '%s\n' "$dout" | grep -v "passed, .* failed" | sed "s/^/$pre /" >&2
    dline=$(printf '%s\n' "$dout" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
    if [ "$GATE" = 1 ]; then
        echo "pair: g4 $zname / llama.cpp libggml-cpu-$DEF_LL.so: ${dline:-no result}"
        if [ -z "$dline" ] || [ "$drc" -ne 0 ]; then rc=1; fi
        dp=$(printf '%s\n' "$dline" | sed -E 's/^([0-9]+) passed, ([0-9]+) failed$/\1/')
        df=$(printf '%s\n' "$dline" | sed -E 's/^([0-9]+) passed, ([0-9]+) failed$/\2/')
        p0=$(printf '%s\n' "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
        f0=$(printf '%s\n' "$line" | sed -E 's/.*passed, ([0-9]+) failed$/\1/')
        [ -n "$dline" ] || { dp=0; df=1; }
        line="$((p0 + dp)) passed, $((f0 + df)) failed"
    else
        echo "report: default pair g4 $zname / llama.cpp libggml-cpu-$DEF_LL.so, not gated (this pair not checked on its host): ${dline:-no result}"
    fi
  done
fi
echo "$line"
[ "$rc" -eq 0 ]
