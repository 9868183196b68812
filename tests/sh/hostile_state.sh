#!/bin/sh
# hostile_state.sh - the hostile saved-state catalog: bad g4_session_save files through
# `g4 run --prompt-cache FILE --prompt-cache-ro` (g4_session_load): each is refused with exit
# status 1 and one line naming what is wrong; no sanitizer report, no hang; a valid file
# still works afterwards. Files are made by editing a real state (tests/sh/state_edit.py
# recomputes the checksum where a case needs a consistent file with one bad field).
# Last line: "N passed, M failed".
B=${B:-build}
G4="$B/g4"
dir="$B/hostile-state"
rm -rf "$dir" && mkdir -p "$dir"
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
if ! command -v python3 >/dev/null 2>&1; then echo "hostile_state: skipped (no python3)"; echo "0 passed, 0 failed"; exit 0; fi
M=$dir/m.gguf
M2=$dir/other.gguf
"$B/g4-mkmodel" "$M" >/dev/null 2>&1 && "$B/g4-mkmodel" "$M2" --seed 5 >/dev/null 2>&1 || { bad "g4-mkmodel"; echo "$pass passed, $fail failed"; exit 1; }
P=2,17,33,45,99,100,101,102,103,104,105,106,260,261,300,301,302,303,310,311
run() { # state-file expected-substring [extra g4 run args]
    f=$1; want=$2; shift 2
    timeout 60 "$G4" run -m "$M" -p "$P" --ids -n 1 --temp 0 --prompt-cache "$f" --prompt-cache-ro "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
    if grep -qE 'Sanitizer|runtime error' "$dir/err"; then bad "$f: sanitizer report: $(head -c 600 "$dir/err")"; return; fi
    if [ "$want" = OK ]; then
        if [ $rc -eq 0 ]; then ok; else bad "$f: expected to load, rc=$rc: $(cat "$dir/err")"; fi
        return
    fi
    if [ $rc -ne 1 ]; then bad "$f: exit status $rc, expected 1: $(head -c 300 "$dir/err")"; return; fi
    if ! grep -qF -- "$want" "$dir/err"; then bad "$f: message '$(cat "$dir/err")' lacks '$want'"; return; fi
    [ "$(wc -l <"$dir/err")" -eq 1 ] && ok || bad "$f: expected one line on stderr: $(cat "$dir/err")"
}
S=$dir/good.state
"$G4" run -m "$M" -p "$P" --ids -n 1 --temp 0 --prompt-cache "$S" >/dev/null 2>&1 || bad "writing the state"
run "$S" OK
E="python3 tests/sh/state_edit.py"
$E "$S" "$dir/magic" set 0 4 0x54534758 && run "$dir/magic" "not a gemma4.c state file"
$E "$S" "$dir/version" set 4 4 9 && run "$dir/version" "version 9"
$E "$S" "$dir/size" set 8 8 12345 && run "$dir/size" "another model"
$E "$S" "$dir/cache" set 24 4 0 && run "$dir/cache" "cache type"
$E "$S" "$dir/slots" set 28 4 77 && run "$dir/slots" "KV slots"
$E "$S" "$dir/npast" set 32 4 4000000000 && run "$dir/npast" "positions, the session holds n_ctx"
$E "$S" "$dir/ringlo" set 36 4 999 && run "$dir/ringlo" "after n_past"
$E "$S" "$dir/ntok" set 44 4 3 && run "$dir/ntok" "tokens for"
$E "$S" "$dir/payload" set 48 8 7 && run "$dir/payload" "payload of 7 bytes"
$E "$S" "$dir/geometry" set 64 4 31 && run "$dir/geometry" "geometry differs"
$E "$S" "$dir/token" token 3 99999 && run "$dir/token" "outside [0,"
$E "$S" "$dir/flip" flip 400 && run "$dir/flip" "checksum mismatch"
$E "$S" "$dir/tail" append 1 && run "$dir/tail" "trailing bytes"
$E "$S" "$dir/empty" cut 0 && run "$dir/empty" "shorter than the 64-byte header"
$E "$S" "$dir/cut_hdr" cut 40 && run "$dir/cut_hdr" "shorter than the 64-byte header"
$E "$S" "$dir/cut_slots" cut 70 && run "$dir/cut_slots" "truncated in the slot table"
$E "$S" "$dir/cut_pay" cut -10 && run "$dir/cut_pay" "payload bytes missing"
run "$S" "n_ctx" -c 16
run "$S" "cache type" --cache-type f32
"$G4" run -m "$M2" -p "$P" --ids -n 1 --temp 0 --prompt-cache "$dir/other.state" >/dev/null 2>&1 || bad "writing the other state"
run "$dir/other.state" "another model"
run /dev/null "shorter than the 64-byte header"
run "$dir" "load:"
# and the good one still loads after all of that
run "$S" OK
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
