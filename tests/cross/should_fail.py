# SPDX-License-Identifier: MIT
# The names of a build tree's should_fail tests, one a line, for
# tests/cross/run.sh: meson introspect --tests does not show the flag, so
# this reads the test setup meson keeps for `meson test`. Run it with
# meson's own interpreter (`meson runpython`, which can import mesonbuild
# for the pickle). Prints nothing if the setup cannot be read.
import pickle
import sys

try:
    with open(sys.argv[1] + "/meson-private/meson_test_setup.dat", "rb") as f:
        tests = pickle.load(f)
except Exception as e:  # an other meson's layout: no expected failures
    print("cross: should_fail unknown (%s)" % e, file=sys.stderr)
    tests = []
for t in tests:
    if getattr(t, "should_fail", False):
        print(t.name)
