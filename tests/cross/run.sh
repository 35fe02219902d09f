#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Cross test run (issue 11): tests/cross/run.sh ARCH [SUITE...]
#   ARCH aarch64 | ppc64le; SUITE unit | stress (default: both) | bench
#   (bench: syslet-bench --quick in the guest, a smoke check of the
#   contenders there, its timings meaningless; built in build-ARCH-bench
#   with the target's liburing, libuv and libaio)
# Installs what is missing (Debian's cross compilers, qemu-system, the
# multiarch libraries and kernel), cross-builds into build-ARCH with the
# Meson cross file tests/cross/ARCH.ini, makes an initramfs (busybox-static
# of ARCH, the suites' binaries, their libraries, tests/cross/init), boots
# Debian's own kernel under full-system emulation with 2 vCPUs, and reads
# the result off the serial console (build-ARCH/cross-SUITES/console.log).
# Prints "N passed, N failed, N skipped"; exits non-zero on any failure.
# Knobs: SYSLET_CROSS_TIMEOUT_MULT (each test's meson timeout times this,
# default 10: emulation is slow), SYSLET_CROSS_LIMIT (seconds the guest
# may run in all, default the sum of the tests' timeouts plus 600; a guest
# still running then is killed and the run fails, naming the test it was
# in), SYSLET_CROSS_MEM (MiB, default 2048), SYSLET_CROSS_TESTS="name ..."
# (only these tests).
set -euo pipefail
cd "$(dirname "$0")/../.."

arch=${1:-}
shift || true
suites=("$@")
((${#suites[@]})) || suites=(unit stress)
case $arch in
aarch64)
	deb=arm64 triplet=aarch64-linux-gnu flavour=arm64
	qemu=(qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on)
	console=ttyAMA0 kimage=vmlinuz qpkg=qemu-system-arm kargs=
	;;
ppc64le)
	deb=ppc64el triplet=powerpc64le-linux-gnu flavour=powerpc64le
	qemu=(qemu-system-ppc64 -M pseries -vga none)
	# disable_tlbie: Debian 12's QEMU 7.2 (one host thread per vCPU)
	# lets a vCPU run on with a stale translation after another vCPU's
	# broadcast tlbie, so a thread's store is lost when another thread
	# of its process forks (the page's copy-on-write): 67 stores lost
	# in 400 forks in test_fork_stores, radix or hash MMU, POWER8 or
	# POWER9 (kvm-unit-tests' powerpc/mmu.c kfails its tlbie test under
	# TCG for this race). With it the kernel flushes the other CPUs by
	# IPI and tlbiel, each vCPU its own TLB: none lost. Slower (forks,
	# munmap): test_cancel 344 s, not 33 s. (thread=single cures it too
	# but starves the tests that need both vCPUs at once.)
	kargs=disable_tlbie
	console=hvc0 kimage=vmlinux qpkg=qemu-system-ppc
	;;
*)
	echo "usage: $0 aarch64|ppc64le [unit] [stress] [bench]" >&2
	exit 2
	;;
esac
mult=${SYSLET_CROSS_TIMEOUT_MULT:-10}
bench= build=build-$arch
if [[ " ${suites[*]} " == *" bench "* ]]; then
	bench=1 build=build-$arch-bench
fi
# one work dir per suite set: two runs of different suites can overlap
work=$build/cross-$(IFS=-; echo "${suites[*]}")

# The host's packages and the target's, through multiarch. The cross C
# library's headers and crt files are only a Recommends of gcc-$triplet,
# which --no-install-recommends skips: named here (without them a fresh
# machine's cross build stopped at meson's find_library('dl'), ppc64le, in
# CI; no <stdio.h> either).
pkgs=(meson ninja-build pkg-config python3 cpio e2fsprogs binutils "$qpkg"
      "gcc-$triplet" "libc6-dev-$deb-cross" "libc6:$deb" "liburcu-dev:$deb"
      "libcmocka-dev:$deb"
      "linux-image-$flavour:$deb")
if [[ -n $bench ]]; then
	pkgs+=("liburing-dev:$deb" "libuv1-dev:$deb" "libaio-dev:$deb")
fi
install_missing() {
	local missing=() p
	dpkg --print-foreign-architectures | grep -qx "$deb" ||
		dpkg --add-architecture "$deb"
	for p in "${pkgs[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	((${#missing[@]})) || return 0
	echo "cross: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# busybox-static of the target is not co-installable with the host's:
# its package, downloaded through apt and unpacked into the work dir. If
# the download fails, the package lists are updated and it is tried again
# (lists older than the target's architecture, on a machine that had all
# the packages: install_missing updated nothing).
busybox() {
	local dir=$work/busybox
	if [[ ! -x $dir/bin/busybox ]]; then
		mkdir -p "$dir"
		(cd "$dir" &&
			{ apt-get download -qq "busybox-static:$deb" 2>/dev/null ||
				{ apt-get update -qq &&
					apt-get download -qq "busybox-static:$deb"; }; } &&
			dpkg-deb -x busybox-static_*.deb .) >&2
	fi
	echo "$dir/bin/busybox"
}

# add ROOT FILE: copy an ELF file's interpreter and libraries (from the
# multiarch directories or the build tree) into ROOT, recursively.
declare -A added
add_libs() {
	local root=$1 f=$2 lib p interp d
	interp=$(readelf -l "$f" 2>/dev/null |
		sed -n 's/.*interpreter: \(.*\)]/\1/p')
	if [[ -n $interp && -z ${added[$interp]:-} ]]; then
		added[$interp]=1
		mkdir -p "$root$(dirname "$interp")"
		cp -L "$interp" "$root$interp"
	fi
	for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[[ -n ${added[$lib]:-} ]] && continue
		added[$lib]=1
		[[ -e $build/src/$lib ]] && continue # in /b/src
		# a test's own library (libcredhelper.so): beside it, $ORIGIN
		if [[ -e $(dirname "$f")/$lib && $f == "$build"/* ]]; then
			d=$(dirname "${f#"$build"/}")
			mkdir -p "$root/b/$d"
			cp -L "$build/$d/$lib" "$root/b/$d/$lib"
			add_libs "$root" "$(dirname "$f")/$lib"
			continue
		fi
		for p in /lib/$triplet /usr/lib/$triplet; do
			[[ -e $p/$lib ]] || continue
			mkdir -p "$root$p"
			cp -L "$p/$lib" "$root$p/$lib"
			add_libs "$root" "$p/$lib"
			break
		done
	done
}

# The kernel's modules for an ext4 disk on virtio-blk-pci, which Debian
# builds as modules: each with what modules.dep says it needs first, into
# ROOT/modules/ and, in load order, ROOT/modules.list.
modules() {
	local root=$1 dir m dep line
	dir=$(ls -d /lib/modules/*-"$flavour" | sort -V | tail -n 1)
	mkdir -p "$root/modules"
	: >"$root/modules.list"
	for m in virtio_pci virtio_blk crc32c_generic ext4; do
		line=$(grep -E "/$m\.ko:" "$dir/modules.dep") || continue
		# modules.dep: MODULE: its dependencies, the last one loads first
		for dep in $(echo "${line#*:}" | tr ' ' '\n' | tac) "${line%%:*}"; do
			[[ -e $root/modules/${dep##*/} ]] && continue
			cp "$dir/$dep" "$root/modules/"
			echo "${dep##*/}" >>"$root/modules.list"
		done
	done
}

initramfs() {
	local root=$work/root t rel
	rm -rf "$root"
	mkdir -p "$root"/{bin,b/src,proc,sys,dev,tmp}
	cp "$(busybox)" "$root/bin/busybox"
	cp tests/cross/init "$root/init"
	modules "$root"
	cp -a "$build"/src/libsyslet.so* "$root/b/src/"
	add_libs "$root" "$build/src/libsyslet.so.1"
	# glibc loads it by name for pthread_exit() and pthread_cancel()'s
	# unwinding (no NEEDED entry names it): without it, SIGABRT
	mkdir -p "$root/lib/$triplet"
	cp -L "/lib/$triplet/libgcc_s.so.1" "$root/lib/$triplet/"
	add_libs "$root" "/lib/$triplet/libgcc_s.so.1"
	# meson's should_fail tests (introspect does not show the flag: read
	# from the test setup meson keeps, with meson's own interpreter)
	meson runpython tests/cross/should_fail.py "$build" >"$work/xfail"
	# name|timeout|xfail|env|command, in meson's order, the chosen suites
	meson introspect --tests "$build" | python3 -c '
import json, os, shlex, sys
build, mult, xfail, suites = (sys.argv[1], int(sys.argv[2]),
                              open(sys.argv[3]).read().split(), sys.argv[4:])
for t in json.load(sys.stdin):
    if not any(s.split(":")[-1] in suites for s in t["suite"]):
        continue
    # a host-side script (python3: probes, example-cat): not in the guest
    if not os.path.realpath(t["cmd"][0]).startswith(build + "/"):
        print("cross: %s runs on the host, left out" % t["name"],
              file=sys.stderr)
        continue
    # quoted for the guest to eval (a skip reason has spaces)
    env = " ".join(shlex.quote("%s=%s" % kv) for kv in t["env"].items()
                   if kv[0] != "LD_LIBRARY_PATH")
    # every file of the build tree the command names (a twin binary,
    # the path of the library): in the guest, under /b
    # (meson names the executables among the arguments relative to it)
    def guest(a):
        f = os.path.realpath(os.path.join(build, a))
        if f.startswith(build + "/") and os.path.isfile(f):
            return "/b/" + os.path.relpath(f, build)
        return a
    cmd = [guest(a) for a in t["cmd"]]
    flag = int(t["name"] in xfail)
    print("%s|%d|%d|%s|%s" % (t["name"], t["timeout"] * mult, flag, env,
                              " ".join(cmd)))
' "$(realpath "$build")" "$mult" "$work/xfail" "${suites[@]}" \
		>"$root/tests.list"
	# the bench: its figures are printed, its status says whether every
	# contender completed every operation (never about timings)
	if [[ -n $bench ]]; then
		printf 'bench-quick|%s|0||%s\n' \
			"${SYSLET_CROSS_BENCH_TIMEOUT:-3600}" \
			"/b/bench/syslet-bench --quick --timeout 1200 --wait 300" \
			>>"$root/tests.list"
	fi
	while IFS='|' read -r _ _ _ _ t; do
		for t in $t; do
			[[ $t == /b/* ]] || continue
			rel=${t#/b/}
			[[ -e $root/b/$rel ]] && continue
			mkdir -p "$root/b/$(dirname "$rel")"
			cp "$build/$rel" "$root/b/$rel"
			add_libs "$root" "$build/$rel"
		done
	done <"$root/tests.list"
	(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 \
		>"$work/initramfs.gz"
	echo "cross: initramfs $(du -h "$work/initramfs.gz" | cut -f1)," \
		"$(wc -l <"$root/tests.list") tests (${suites[*]})"
}

boot() {
	local kernel log=$work/console.log limit picked=
	# unknown name=value words of the command line reach /init's env
	[[ -n ${SYSLET_CROSS_TESTS:-} ]] &&
		picked="SYSLET_CROSS_TESTS=\"$SYSLET_CROSS_TESTS\""
	kernel=$(ls /boot/$kimage-*-"$flavour" | sort -V | tail -n 1)
	# the run's bound: every test's timeout, plus boot time
	limit=$(awk -F'|' '{ s += $2 } END { print s + 600 }' \
		"$work/root/tests.list")
	limit=${SYSLET_CROSS_LIMIT:-$limit}
	# /var/tmp of the guest: a fresh ext4 disk (page cache, negative
	# dentries and RWF_NOWAIT as on a real disk, which tmpfs lacks)
	rm -f "$work/disk.img"
	truncate -s 512M "$work/disk.img"
	mkfs.ext4 -q -F "$work/disk.img"
	echo "cross: booting $kernel (${qemu[0]}, 2 vCPUs), log $log"
	# nice 19: the emulator's two busy vCPUs yield the host's CPUs to
	# anything else that runs (native timing-sensitive tests beside it)
	timeout -s KILL "$limit" nice -n 19 "${qemu[@]}" -smp 2 \
		-m "${SYSLET_CROSS_MEM:-2048}" -kernel "$kernel" \
		-initrd "$work/initramfs.gz" \
		-drive "file=$work/disk.img,format=raw,if=none,id=d0" \
		-device virtio-blk-pci,drive=d0 \
		-append "console=$console rdinit=/init panic=-1 quiet $kargs $picked" \
		-display none -serial stdio -monitor none -nic none -no-reboot \
		</dev/null 2>&1 | sed -u 's/\r$//' | tee "$log" || true
}

t0=$SECONDS
install_missing
if [[ ! -f $build/build.ninja ]]; then
	meson setup "$build" --cross-file "tests/cross/$arch.ini" \
		-Dbench=$([[ -n $bench ]] && echo true || echo false) \
		${CI:+--werror}
fi
ninja -C "$build"
mkdir -p "$work"
initramfs
boot
result=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$work/console.log" |
	tail -n 1 || true)
echo "cross: $arch ${suites[*]}: $((SECONDS - t0)) s in all"
if [[ -z $result ]]; then
	echo "cross: $arch: no result line (the guest hung or crashed" \
		"or ran past its limit), in: $(grep '^cross-test: ' \
		"$work/console.log" | tail -n 1 | cut -d' ' -f2)"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
echo "$result"
[[ $result == *" 0 failed"* ]]
