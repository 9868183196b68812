#!/usr/bin/env python3
"""austen.py - Jane Austen's six novels as plain text, from Debian's r-cran-janeaustenr.

The package keeps the novels in an R lazy-load database (Rdata.rdx index + Rdata.rdb
objects). This reads just enough of R's serialization format (character vectors, lists,
pairlists) to write the six character vectors, one line per element, in the index order
(Emma, Mansfield Park, Northanger Abbey, Persuasion, Pride and Prejudice, Sense and
Sensibility). See shared/docs/test-data.md section 4.

    apt-get download r-cran-janeaustenr && dpkg-deb -x r-cran-janeaustenr_1.0.0-1_all.deb x
    python3 scripts/austen.py x > austen.txt
    # sha256 65b434d16a8755142bfa95ba19c5f9abd0d30cf3dffe3b6793e834f9f56dcc96 (4,025,029 bytes)
"""
import gzip
import struct
import sys
import zlib


class RReader:
    def __init__(self, data):
        self.b = data
        self.p = 0
        self.refs = []

    def int32(self):
        v = struct.unpack(">i", self.b[self.p:self.p + 4])[0]
        self.p += 4
        return v

    def top(self):
        if self.b[:2] != b"X\n":
            raise ValueError("not an XDR R serialization")
        self.p = 2
        version = self.int32()
        self.int32()  # writer version
        self.int32()  # minimal reader version
        if version == 3:
            n = self.int32()  # native encoding name
            self.p += n
        return self.item()

    def item(self):
        flags = self.int32()
        kind = flags & 0xFF
        has_attr = (flags >> 9) & 1
        has_tag = (flags >> 10) & 1
        if kind in (254, 242):  # NILVALUE, EMPTYENV
            return None
        if kind == 255:  # REFSXP
            idx = flags >> 8
            return self.refs[(idx if idx else self.int32()) - 1]
        if kind == 1:  # SYMSXP
            sym = self.item()
            self.refs.append(sym)
            return sym
        if kind == 2:  # LISTSXP (pairlist)
            if has_attr:
                self.item()
            tag = self.item() if has_tag else None
            return ("pair", tag, self.item(), self.item())
        if kind == 9:  # CHARSXP
            n = self.int32()
            if n < 0:
                return None
            s = self.b[self.p:self.p + n].decode("utf-8", "replace")
            self.p += n
            return s
        if kind in (16, 19, 13, 10, 14):  # STRSXP, VECSXP, INTSXP, LGLSXP, REALSXP
            n = self.int32()
            if kind in (16, 19):
                v = [self.item() for _ in range(n)]
            elif kind in (13, 10):
                v = [self.int32() for _ in range(n)]
            else:
                v = list(struct.unpack(">%dd" % n, self.b[self.p:self.p + 8 * n]))
                self.p += 8 * n
            attr = self.item() if has_attr else None
            return ("vec", kind, v, attr)
        raise ValueError("unsupported R type %d" % kind)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "x"
    d = root.rstrip("/") + "/usr/lib/R/site-library/janeaustenr/data/"
    index = RReader(gzip.decompress(open(d + "Rdata.rdx", "rb").read())).top()
    variables = index[2][0]          # list: offsets of each object
    names = variables[3][2][2]       # its names attribute
    rdb = open(d + "Rdata.rdb", "rb").read()
    out = sys.stdout
    for name, entry in zip(names, variables[2]):
        off, length = entry[2]
        obj = RReader(zlib.decompress(rdb[int(off) + 4:int(off) + int(length)])).top()
        out.write("\n".join(line or "" for line in obj[2]) + "\n")


if __name__ == "__main__":
    main()
