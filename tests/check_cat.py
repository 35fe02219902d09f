#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Description: examples/syslet-cat prints a directory's regular files in
# name order, byte for byte, whatever the depth and ring size; files of
# all sizes (empty, one byte, a page, several MiB), some dropped from the
# page cache so that their reads go to workers. Usage: check_cat.py EXE
import os
import subprocess
import sys
import tempfile

exe = sys.argv[1]
with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
    sizes = [0, 1, 4095, 4096, 65537, 3 << 20] + [1000 * i for i in range(40)]
    want = b""
    for i, n in enumerate(sizes):
        data = bytes((i * 31 + j) & 0xFF for j in range(n % 4096)) * \
            (n // 4096 + 1)
        data = data[:n]
        path = os.path.join(d, "f%03d" % i)
        with open(path, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    os.mkdir(os.path.join(d, "subdir"))  # skipped: not a regular file
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if os.path.isfile(p):
            with open(p, "rb") as f:
                want += f.read()
    for depth, ring in [(1, 1), (4, 8), (16, 64), (64, 64)]:
        for p in os.listdir(d):
            if os.path.isfile(os.path.join(d, p)):
                with open(os.path.join(d, p), "rb") as f:
                    os.posix_fadvise(f.fileno(), 0, 0,
                                     os.POSIX_FADV_DONTNEED)
        got = subprocess.run([exe, "-d", str(depth), "-r", str(ring), d],
                             check=True, capture_output=True,
                             timeout=60).stdout
        if got != want:
            print("depth %d ring %d: %d bytes, want %d" %
                  (depth, ring, len(got), len(want)))
            sys.exit(1)
        print("depth %d ring %d: %d bytes ok" % (depth, ring, len(got)))
    # Bad options are refused.
    r = subprocess.run([exe, "-d", "8", "-r", "4", d], capture_output=True)
    if r.returncode != 2:
        sys.exit(1)
