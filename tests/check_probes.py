#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Description: the USDT probes of syslet(7) are in the built library:
# readelf -n lists a stapsdt note, provider "syslet", for each name.
# Usage: check_probes.py LIBRARY HAVE_SDT (exit 77: built without sdt.h).
import re
import shutil
import subprocess
import sys

PROBES = ["submit", "inline", "punt", "worker_start", "worker_exit",
          "complete", "notify", "cancel"]

lib, have_sdt = sys.argv[1], sys.argv[2] == "true"
if not have_sdt or not shutil.which("readelf"):
    print("no <sys/sdt.h> at build time or no readelf: skipped")
    sys.exit(77)
out = subprocess.run(["readelf", "-n", lib], check=True,
                     capture_output=True, text=True).stdout
found = set(re.findall(r"Provider: syslet\s+Name: (\w+)", out))
missing = [p for p in PROBES if p not in found]
print("probes found:", " ".join(sorted(found)))
if missing:
    print("missing:", " ".join(missing))
    sys.exit(1)
