#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One entry point for people and CI, on Debian 12 as root:
#   ./run.sh main   install what is missing, build, run the main job
#   ./run.sh test   install what is missing, build, run every test suite
# CI=true adds -Werror.
set -euo pipefail
cd "$(dirname "$0")"

pkgs=(meson ninja-build pkg-config gcc liburcu-dev libcmocka-dev
      liburing-dev libuv1-dev libaio-dev)

install_missing() {
	local missing=() p
	for p in "${pkgs[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	((${#missing[@]})) || return 0
	echo "run.sh: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# build DIR [meson options...]
build() {
	local dir=$1
	shift
	local werror=()
	[[ ${CI:-} == true ]] && werror=(--werror)
	if [[ ! -f $dir/build.ninja ]]; then
		meson setup "$dir" "${werror[@]}" "$@"
	fi
	ninja -C "$dir"
}

case ${1:-} in
main)
	install_missing
	build build
	./build/examples/syslet-demo
	./build/bench/syslet-bench --quick
	;;
test)
	install_missing
	build build
	meson test -C build --print-errorlogs --num-processes 2
	;;
*)
	echo "usage: $0 main|test" >&2
	exit 2
	;;
esac
