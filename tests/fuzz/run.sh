#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run each harness for a bounded time: tests/fuzz/run.sh [BUILD_DIR] [SECONDS]
# New inputs go to a scratch corpus (the repository's seed corpus in
# tests/fuzz/corpus/NAME is read, not written); a crash leaves its input
# in BUILD_DIR/crash-* to be added to the corpus as a regression input.
# Prints "fuzz NAME: N executions, 0 crashes" per harness.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-build-fuzz}
secs=${2:-60}
tests/fuzz/build.sh "$dir"
status=0
for h in tests/fuzz/fuzz_*.c; do
	name=$(basename "$h" .c)
	scratch=$(mktemp -d)
	mkdir -p "tests/fuzz/corpus/$name"
	if "$dir/$name" -max_total_time="$secs" -timeout=30 \
		-rss_limit_mb=4096 -print_final_stats=1 \
		-artifact_prefix="$dir/crash-$name-" \
		"$scratch" "tests/fuzz/corpus/$name" >"$dir/$name.log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' \
			"$dir/$name.log")
		echo "fuzz $name: $runs executions in ${secs} s, 0 crashes"
	else
		echo "fuzz $name: FAILED, see $dir/$name.log:"
		grep -E 'fuzz_|ERROR|SUMMARY|Test unit written' \
			"$dir/$name.log" | head -20
		status=1
	fi
	rm -rf "$scratch"
done
exit $status
