#!/bin/sh
# tests/sh/neon.sh - cross-compile the quant and kernel tests for aarch64 and run them under
# qemu-aarch64 (-cpu max: NEON, dotprod, fp16, SVE, i8mm), so the neon and i8mm tables are
# checked against the scalar one on an x86 host. Needs gcc-aarch64-linux-gnu and qemu-user (qemu-aarch64);
# without them it reports a skip. The last line is always "N passed, M failed".
CC_ARM=${CC_ARM:-aarch64-linux-gnu-gcc}
QEMU=${QEMU:-qemu-aarch64}
if [ -n "$G4_SANITIZED" ]; then # cross-compiled: nothing here is sanitized, the plain run covers it
    echo "skipped: sanitizer run"
    echo "0 passed, 0 failed"
    exit 0
fi
if ! command -v "$CC_ARM" >/dev/null 2>&1 || ! command -v "$QEMU" >/dev/null 2>&1; then
    echo "skipped: no cross compiler"
    echo "0 passed, 0 failed"
    exit 0
fi
B=${B:-build}
OUT="$B/neon"
mkdir -p "$OUT"
F="-std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -DG4_BUILD -Iinclude -Isrc"
set -e
fail() { echo "neon: $1"; echo "0 passed, 1 failed"; exit 1; }
. tests/sh/neon_objs.inc
$CC_ARM $F -static -o "$OUT/g4-test" tests/test_main.c tests/test_quant.c tests/test_kern.c \
    "$OUT"/quant_ref.o "$OUT"/types.o "$OUT"/cpu.o "$OUT"/kern_scalar.o "$OUT"/kern_exp.o "$OUT"/kern_tanh.o $NEON_OBJS -lm \
    || fail "link"
set +e
res=$(G4_TEST_VERBOSE=1 "$QEMU" -cpu max "$OUT/g4-test" quant kern 2>"$OUT/stderr")
rc=$?
cat "$OUT/stderr" >&2
grep -q "testing kernel set neon" "$OUT/stderr" || { echo "neon: the neon table was not tested (CPU features?)"; rc=1; }
grep -q "testing kernel set i8mm" "$OUT/stderr" || { echo "neon: the i8mm table was not tested (qemu -cpu max: SVE, i8mm?)"; rc=1; }
line=$(printf '%s\n' "$res" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
[ -n "$line" ] || line="0 passed, 1 failed"
if [ $rc -ne 0 ] && printf '%s' "$line" | grep -q ' 0 failed'; then
    p=$(printf '%s' "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
    line="$p passed, 1 failed"
fi
echo "$line"
