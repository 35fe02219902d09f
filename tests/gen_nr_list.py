#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Print { "name", nr }, for every __NR_ of <asm/unistd.h>, as the compiler
# given in argv sees it (test_class walks them). asm-generic architectures
# (aarch64) define some names as aliases (__NR_fcntl __NR3264_fcntl): they
# are followed; __NR_syscalls and __NR_arch_specific_syscall are not calls.
import re
import subprocess
import sys

PSEUDO = {'syscalls', 'arch_specific_syscall'}
src = b'#include <asm/unistd.h>\n'
out = subprocess.run(sys.argv[1:] + ['-E', '-dM', '-x', 'c', '-'],
                     input=src, capture_output=True, check=True).stdout
raw = dict(re.findall(r'^#define (__NR\w+) (\w+)\s*$', out.decode(), re.M))
for name, val in sorted(raw.items()):
    while val in raw:
        val = raw[val]
    if name.startswith('__NR_') and val.isdigit() and \
            name[5:] not in PSEUDO:
        print('{ "%s", %s },' % (name[5:], val))
