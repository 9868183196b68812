#!/usr/bin/env python3
"""rss.py CMD... - run CMD, print its peak resident set (KiB) on stderr as 'peak_rss_kib N'.
Used by scripts/bench_vs_llama.sh (no /usr/bin/time needed)."""
import resource, subprocess, sys
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
print("peak_rss_kib %d" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(rc)
