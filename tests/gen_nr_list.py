#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Print { "name", nr }, for every __NR_ of <asm/unistd_64.h>, as the
# compiler given in argv sees it (test_class walks them).
import re
import subprocess
import sys

src = b'#include <asm/unistd_64.h>\n'
out = subprocess.run(sys.argv[1:] + ['-E', '-dM', '-x', 'c', '-'],
                     input=src, capture_output=True, check=True).stdout
for m in re.finditer(r'^#define __NR_(\w+) (\d+)$', out.decode(), re.M):
    print('{ "%s", %s },' % (m.group(1), m.group(2)))
