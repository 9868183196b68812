#!/bin/sh
# tests/sh/avx512_simde.sh - runs the AVX-512 kernel table on CPUs without AVX-512: builds
# kern_avx512.c against SIMDe's portable AVX-512 intrinsics (package libsimde-dev, header-only)
# with -DG4_SIMDE_AVX512, which also lets cpu.c offer (and pick) the table on any AVX2 CPU, and
# links it with the normal build's other objects ($B/obj, the server's too as the Makefile
# links them; so only two files are compiled here) into $B/simde/g4-test and $B/simde/g4. With
# G4_ISA=avx512 it then runs what depends on the table (forced: a model open fails if the
# table cannot run):
#   - g4-test kern: every table against the scalar one (as on a real AVX-512 CPU);
#   - g4-test forward concurrency: the forward pass and the session's promises (ubatches,
#     threads and concurrent sessions give the same bits; other eval schedules stay within
#     their float-order bounds, tokens equal away from near-ties) in the AVX-512 float order;
#   - g4-test batch: g4_batch_eval against each session alone (within the float-order bounds
#     on this table, bit for bit on the scalar one), chunking and threads bit-identical,
#     truncate, abort and saved state, in that order too;
#   - tests/sh/run_cli.sh with that g4 (same ids and logits over --ubatch / -t through the CLI).
# The rest of the suite (tokenizer, GGUF, sampler, quantizers, the oracles, which pin g4 to the
# AVX2 table) does not depend on the table. SIMDe is slower than native code: on the shared Zen
# 1 host (noisy) the runs take about 35 CPU-seconds (batch 24 of them, 11 natively), compiling
# kern_avx512.c against it 20 s. On a CPU with AVX-512 the normal build already tests the
# real table, so this adds emulated coverage only. In the sanitizer pass (G4_SANITIZED,
# B=build/asan) only the kern group runs, the two SIMDe objects built without the sanitizers
# (SIMDe under UBSan takes minutes to compile) and linked with the instrumented rest: the
# forward pass's memory safety is the normal asan suite's job.
# Without SIMDe or AVX2 it reports a skip. Last line: "N passed, M failed".
CC=${CC:-cc}
if [ ! -f /usr/include/simde/x86/avx512.h ]; then
    echo "skipped: no SIMDe (libsimde-dev)"
    echo "0 passed, 0 failed"
    exit 0
fi
case "$($CC -dumpmachine 2>/dev/null)" in x86_64*|amd64*) ;; *) echo "skipped: not x86-64"; echo "0 passed, 0 failed"; exit 0;; esac
if ! grep -q avx2 /proc/cpuinfo 2>/dev/null; then echo "skipped: no AVX2"; echo "0 passed, 0 failed"; exit 0; fi
B=${B:-build}
OUT="$B/simde"
mkdir -p "$OUT"
fail() { echo "avx512_simde: $1"; echo "0 passed, 1 failed"; exit 1; }
SAN=""
[ -n "$G4_SANITIZED" ] && SAN="-fsanitize=address,undefined" # to link the asan build's objects
F="-std=c11 -O1 -g -D_GNU_SOURCE -DG4_BUILD -DG4_SIMDE_AVX512 -fPIC -Iinclude -Isrc -w -Wno-psabi"
$CC $F -c src/kern/cpu.c -o "$OUT/cpu.o" || fail "compile cpu.c"
$CC $F -mavx2 -mfma -mf16c -c src/kern/kern_avx512.c -o "$OUT/kern_avx512.o" || fail "compile kern_avx512.c (SIMDe)"

# the normal build's objects for everything else (mirrors the Makefile's x86-64 LIB_SRC; tests, cli)
lib=""
for s in src/*.c src/quant/*.c src/kern/kern_scalar.c src/kern/kern_exp.c src/kern/kern_tanh.c src/kern/kern_avx2.c; do
    o="$B/obj/${s%.c}.o"
    [ -f "$o" ] || fail "$o missing (run make first)"
    lib="$lib $o"
done
tst=""; for s in tests/*.c; do o="$B/obj/${s%.c}.o"; [ -f "$o" ] || fail "$o missing (run make first)"; tst="$tst $o"; done
cli=""; for s in cli/*.c; do o="$B/obj/${s%.c}.o"; [ -f "$o" ] || fail "$o missing (run make first)"; cli="$cli $o"; done
srv="$B/obj/gen/page.o"; [ -f "$srv" ] || fail "$srv missing (run make first)" # the server's objects need cli/spec.o, cli/util.o
for s in server/*.c; do o="$B/obj/${s%.c}.o"; [ -f "$o" ] || fail "$o missing (run make first)"; srv="$srv $o"; done
# shellcheck disable=SC2086
$CC $SAN -o "$OUT/g4-test" $tst $lib $srv "$B/obj/cli/spec.o" "$B/obj/cli/util.o" "$OUT/cpu.o" "$OUT/kern_avx512.o" -lm -lpthread || fail "link g4-test"
# shellcheck disable=SC2086
$CC $SAN -o "$OUT/g4" $cli $srv $lib "$OUT/cpu.o" "$OUT/kern_avx512.o" -lm -lpthread || fail "link g4"

pass=0; nfail=0
add() { # the "N passed, M failed" line of one run, its exit status
    line=$(printf '%s\n' "$1" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    p=$(printf '%s' "$line" | sed -nE 's/^([0-9]+) passed.*/\1/p'); f=$(printf '%s' "$line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
    [ -n "$p" ] || { p=0; f=1; }
    if [ "$2" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    pass=$((pass + p)); nfail=$((nfail + f))
}
# both variants of the table (kern_cpu.zmm): the ymm integer kernels, then the zmm ones
for zv in 0 1; do
    res=$(G4_ISA=avx512 G4_ZMM=$zv G4_TEST_VERBOSE=1 "$OUT/g4-test" kern 2>"$OUT/kern.err"); rc=$?
    grep -q "testing kernel set avx512" "$OUT/kern.err" || { echo "avx512_simde: the avx512 table was not tested (G4_ZMM=$zv)" >&2; rc=1; }
    grep -q "^FAIL" "$OUT/kern.err" && grep -A1 "^FAIL" "$OUT/kern.err" >&2
    add "$res" $rc
done
if [ -z "$G4_SANITIZED" ]; then
    # both variants again: the zmm one repacks the models' Q4_K matrices at open
    for zv in 0 1; do
        res=$(G4_ISA=avx512 G4_ZMM=$zv "$OUT/g4-test" forward concurrency batch 2>"$OUT/forward.err"); rc=$?
        cat "$OUT/forward.err" >&2
        add "$res" $rc
    done
    res=$(G4_ISA=avx512 G4="$OUT/g4" sh tests/sh/run_cli.sh 2>"$OUT/run_cli.err"); rc=$?
    cat "$OUT/run_cli.err" >&2
    add "$res" $rc
fi
echo "$pass passed, $nfail failed"
[ "$nfail" -eq 0 ]
