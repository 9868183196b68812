#!/usr/bin/env python3
"""state_edit.py - makes one defect in a gemma4.c state file (src/state.c format) for
tests/sh/hostile_state.sh. The checksum is recomputed after every edit except 'flip', so each
file is consistent but for its one bad field.

  state_edit.py IN OUT set OFFSET WIDTH VALUE   little-endian field at OFFSET (4 or 8 bytes)
  state_edit.py IN OUT token INDEX VALUE        the INDEX-th saved token id
  state_edit.py IN OUT flip OFFSET              one payload bit (checksum left stale)
  state_edit.py IN OUT append N                 N trailing zero bytes
  state_edit.py IN OUT cut N                    the first N bytes (negative: all but the last -N)
"""
import struct
import sys

HDR, SLOT = 64, 16


def fnv(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    src, dst, op = sys.argv[1], sys.argv[2], sys.argv[3]
    b = bytearray(open(src, "rb").read())
    n_slots = struct.unpack_from("<I", b, 28)[0]
    body = HDR + SLOT * n_slots  # tokens then payload start here
    rehash = True
    if op == "set":
        off, width, val = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6], 0)
        b[off:off + width] = val.to_bytes(width, "little")
    elif op == "token":
        i, val = int(sys.argv[4]), int(sys.argv[5])
        struct.pack_into("<I", b, body + 4 * i, val)
    elif op == "flip":
        b[int(sys.argv[4])] ^= 0x10
        rehash = False
    elif op == "append":
        b += bytes(int(sys.argv[4]))
        rehash = False
    elif op == "cut":
        n = int(sys.argv[4])
        b = b[:n] if n >= 0 else b[:len(b) + n]
        rehash = False
    else:
        sys.exit("state_edit: unknown op " + op)
    if rehash and len(b) >= HDR:
        struct.pack_into("<Q", b, 56, fnv(b[body:]))  # body as the file had it
    open(dst, "wb").write(b)


main()
