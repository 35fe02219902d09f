#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the libFuzzer harnesses: tests/fuzz/build.sh [BUILD_DIR]
# The library is compiled by Meson with clang, ASan+UBSan and fuzzer
# coverage (its static internal copy); each harness links it with
# -fsanitize=fuzzer,address,undefined. Results: BUILD_DIR/fuzz_*.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-build-fuzz}
cc=${FUZZ_CC:-clang-14}
if [[ ! -f $dir/build.ninja ]]; then
	CC=$cc meson setup "$dir" -Dtests=false -Dbench=false \
		-Db_sanitize=address,undefined -Db_lundef=false \
		-Dc_args='-fsanitize=fuzzer-no-link -fno-sanitize-recover=all' \
		>/dev/null
fi
ninja -C "$dir" src/libsyslet-internal.a >/dev/null
for h in tests/fuzz/fuzz_*.c; do
	name=$(basename "$h" .c)
	"$cc" -std=c11 -g -O1 -Wall -Wextra \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-Iinclude -Isrc "$h" "$dir/src/libsyslet-internal.a" \
		$(pkg-config --cflags --libs liburcu-cds) -lpthread \
		-o "$dir/$name"
done
