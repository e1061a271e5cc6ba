#!/usr/bin/env python3
# Cost of the two "synced write" primitives on this machine's disk: pwrite + fdatasync
# (durable: the device empties its write cache) against pwrite + sync_file_range (what sled 0.34
# does in flush(): waits for the write to reach the device, no cache flush).
# Usage: python3 scripts/sync-primitives.py DIR   (docs/bench/lsm.md, "Session 18: fillsync against sled")
import os, time, ctypes, statistics, sys
libc = ctypes.CDLL("libc.so.6", use_errno=True)
SFR = 1|2|4  # WAIT_BEFORE|WRITE|WAIT_AFTER
def run(mode, n, path):
    fd = os.open(path, os.O_RDWR|os.O_CREAT|os.O_TRUNC, 0o644)
    os.pwrite(fd, b"\0"*(1<<20), 0); os.fsync(fd)   # preallocated, written zeros
    rec = b"x"*149; lat=[]; off=0
    for i in range(n):
        t=time.perf_counter()
        os.pwrite(fd, rec, off); off+=149
        if mode=="fdatasync": os.fdatasync(fd)
        else: libc.sync_file_range(fd, ctypes.c_longlong(0), ctypes.c_longlong(0), SFR)
        lat.append((time.perf_counter()-t)*1e6)
    os.close(fd); return statistics.median(lat)
d=sys.argv[1]
for r in range(5):
    a=run("fdatasync",400,d+"/a"); b=run("sfr",400,d+"/b")
    print(f"round {r}: pwrite+fdatasync p50 {a:.0f} us, pwrite+sync_file_range p50 {b:.0f} us")
