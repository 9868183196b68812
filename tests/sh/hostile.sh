#!/bin/sh
# hostile.sh - every file of the hostile-model catalog (tools/g4-mkbad.c) through `g4 info`
# (assistant files: `g4 info -m TARGET -md FILE`):
# refused with exit status 1 and the expected one-line message, or loaded (exit 0) for the
# "must still load" cases; no sanitizer report, no hang. Run with B=build/asan for the
# sanitizer build. Last line: "N passed, M failed".
B=${B:-build}
G4="$B/g4"
dir="$B/hostile"
rm -rf "$dir" && mkdir -p "$dir"
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
if ! "$B/g4-mkbad" "$dir" 2>"$dir/mkbad.err"; then bad "g4-mkbad: $(cat "$dir/mkbad.err")"; fi
check() { # file expected-substring
    f=$1; want=$2
    # shellcheck disable=SC2086
    timeout 60 "$G4" info -m "$f" $G4_MD >"$dir/out" 2>"$dir/err"; rc=$?
    if grep -qE 'Sanitizer|runtime error|LeakSanitizer' "$dir/err"; then bad "$f: sanitizer report: $(head -c 600 "$dir/err")"; return; fi
    if [ "$want" = OK ]; then
        if [ $rc -eq 0 ]; then ok; else bad "$f: expected to load, rc=$rc: $(cat "$dir/err")"; fi
        return
    fi
    if [ $rc -ne 1 ]; then bad "$f: exit status $rc, expected 1: $(head -c 300 "$dir/err")"; return; fi
    lines=$(wc -l <"$dir/err")
    if ! grep -qF -- "$want" "$dir/err"; then bad "$f: message '$(cat "$dir/err")' lacks '$want'"; return; fi
    if [ "$lines" -ne 1 ]; then bad "$f: expected one line on stderr, got $lines"; return; fi
    ok
}
n=0
while IFS="$(printf '\t')" read -r file want; do
    check "$dir/$file" "$want"; n=$((n + 1))
done <"$dir/manifest.tsv"
[ "$n" -ge 40 ] && ok || bad "only $n catalog cases"
# assistants (MTP draft models) against a valid target: g4 info -m TARGET -md FILE
G4_MD=
n=0
while IFS="$(printf '\t')" read -r file want; do
    G4_MD="-md $dir/$file" check "$dir/asst-target.gguf" "$want"; n=$((n + 1))
done <"$dir/asst-manifest.tsv"
G4_MD=
[ "$n" -ge 20 ] && ok || bad "only $n assistant cases"
# not regular files (#4)
check / "not a regular file (a directory)"
check /dev/zero "not a regular file (a character device)"
mkfifo "$dir/fifo" 2>/dev/null && check "$dir/fifo" "not a regular file (a FIFO)"
check "$dir/does-not-exist.gguf" "cannot open"
echo "$pass passed, $fail failed"
