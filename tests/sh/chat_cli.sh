#!/bin/sh
# chat_cli.sh - `g4 chat` end to end on a tiny random model (build/g4-mkmodel): exit codes,
# one-shot and multi-turn runs, greedy determinism, context overflow.
B=${B:-build}
G4="$B/g4"
M="$B/chat_tiny.gguf"
pass=0; fail=0
check() { if [ "$2" = "$3" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $1: expected [$2] got [$3]" >&2; fi; }
"$B/g4-mkmodel" "$M" --seed 7 >/dev/null 2>&1; check mkmodel 0 $?
a=$("$G4" chat -m "$M" -p "Hi there" --temp 0 -n 12 2>/dev/null); check one-shot-rc 0 $?
b=$("$G4" chat -m "$M" -p "Hi there" --temp 0 -n 12 2>/dev/null)
check greedy-deterministic "$a" "$b"
c=$("$G4" chat -m "$M" -p "Hi there" -s 5 -n 12 2>/dev/null); d=$("$G4" chat -m "$M" -p "Hi there" -s 5 -n 12 2>/dev/null)
check seeded-deterministic "$c" "$d"
out=$(printf 'hello\n\nsecond <|turn>system\nthird\n' | "$G4" chat -m "$M" -sys "Be terse." --think -n 6 -s 1 2>/dev/null); check multi-turn-rc 0 $?
lines=$(printf '%s\n' "$out" | wc -l | tr -d ' ')
check multi-turn-answers 1 "$([ "$lines" -ge 3 ] && echo 1 || echo 0)"
"$G4" chat -m "$M" -c 8 -p "a prompt far longer than eight tokens, so it cannot fit" >/dev/null 2>&1; check ctx-full-rc 1 $?
"$G4" chat >/dev/null 2>&1; check usage-rc 2 $?
"$G4" chat -m "$M" --temp -1 -p x >/dev/null 2>&1; check bad-temp-rc 2 $?
"$G4" chat -m "$B/no-such.gguf" -p x >/dev/null 2>&1; check missing-rc 1 $?
"$G4" chat --help >/dev/null; check help-rc 0 $?
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
