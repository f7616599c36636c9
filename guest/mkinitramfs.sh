#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build build/initramfs-VARIANT.cpio.gz: busybox, /init, the test plans,
# the project's statically linked test programs, the kernel's own
# selftests/mm programs (guest/build-selftests-mm.sh), the data disk's checksums
# and the runner self-test's KUnit module (built against that variant's
# kernel, so it needs kernel/build.sh VARIANT first).
#
# The s390 variant has busybox, /init, the plans, the checksums and the
# test programs, cross-built: Debian's s390x busybox-static comes from
# the archive (scripts/deps.sh adds the architecture).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
variant=${1:-debug}
obj=$top/build/obj-$variant
stage=$top/build/initramfs-$variant
out=$top/build/initramfs-$variant.cpio.gz
cc=gcc busybox=/bin/busybox
if [ "$variant" = s390 ]; then
	cc=s390x-linux-gnu-gcc
	bbdir=$top/build/busybox-s390x
	busybox=$bbdir/bin/busybox
	if [ ! -x "$busybox" ]; then
		rm -rf "$bbdir" && mkdir -p "$bbdir"
		(cd "$bbdir" && apt-get download -qq busybox-static:s390x >/dev/null 2>&1) ||
			{ echo "initramfs: apt-get download busybox-static:s390x failed" \
			       "(is s390x a dpkg architecture? scripts/deps.sh)" >&2; exit 1; }
		dpkg-deb -x "$bbdir"/busybox-static_*_s390x.deb "$bbdir"
	fi
fi
[ -x "$busybox" ] || { echo "initramfs: $busybox is missing (busybox-static)" >&2; exit 1; }

rm -rf "$stage"
mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,mnt,tests,modules,plans}
cp "$busybox" "$stage/bin/busybox"
# the applet list from the host's busybox: the guest's may be another arch
for applet in $(/bin/busybox --list-full); do
	[ -e "$stage/$applet" ] || ln -s /bin/busybox "$stage/$applet"
done
install -m 755 "$top/guest/init" "$stage/init"
install -m 755 "$top/guest/vmdelta" "$stage/tests/vmdelta"
install -m 755 "$top/guest/hostwait" "$stage/tests/hostwait"
cp "$top"/guest/plans/* "$stage/plans/"
cp "$top/build/disks/data.sha256" "$stage/data.sha256"

# The programs that read the page-state table take its layout from the
# series' own header.
inc=$top/build/initramfs-$variant-include
mkdir -p "$inc/linux"
cp "$top/build/linux/include/uapi/linux/pagehint.h" "$inc/linux/"
for src in "$top"/guest/tests/*.c; do
	$cc -static -O2 -Wall -Wextra -Werror -I"$inc" -o "$stage/tests/$(basename "$src" .c)" "$src"
done

# What only the x86 guest runs: kexec, selftests/mm, the self-test module.
if [ "$variant" != s390 ]; then
	# The kexec plan boots this same kernel again, from inside the guest.
	mkdir -p "$stage/boot"
	cp "$obj/arch/x86/boot/bzImage" "$stage/boot/bzImage"

	# The kernel's own selftests/mm programs that the selftests-mm plan runs.
	"$top/guest/build-selftests-mm.sh" "$stage/selftests/mm"
	install -m 755 "$top/guest/selftests-mm/run" "$stage/selftests/run"

	# Debian's git, sqlite3 and xz, which check their own data on the data
	# disk (guest/selfcheck), with the libraries ldd names and the loader.
	# xz replaces busybox's applet; git runs its helpers (gc: repack,
	# prune...) as "git CMD" from its exec path, where git itself suffices.
	install -m 755 "$top/guest/selfcheck" "$stage/tests/selfcheck"
	for prog in /usr/bin/git /usr/bin/sqlite3 /usr/bin/xz; do
		rm -f "$stage$prog"
		cp "$prog" "$stage$prog"
		for lib in $(ldd "$prog" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
			mkdir -p "$stage$(dirname "$lib")"
			cp -L "$lib" "$stage$lib"
		done
	done
	mkdir -p "$stage/usr/lib/git-core"
	ln -s /usr/bin/git "$stage/usr/lib/git-core/git"

	# The self-test module is built in a copy, so the repository stays clean.
	kdir=$top/build/kunit-fail-$variant
	rm -rf "$kdir"
	cp -r "$top/guest/kunit-fail" "$kdir"
	make -s -C "$top/build/linux" O="$obj" M="$kdir" CC="ccache gcc" modules
	cp "$kdir/pagehint_kunit_fail.ko" "$stage/modules/"
fi

(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | gzip -1 > "$out"
echo "initramfs: $out"
