#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install what the build and the tests need, and nothing that is already
# there.  "apt-get update" runs only when a package is missing, so a warm
# machine pays one dpkg query per package and no network round trip.
set -eu

packages=(
	linux-source-6.12	# the guest kernel the series applies to
	linux-config-6.12	# Debian's own configs: does the page flag fit? (kernel/distro-flags.sh)
	xz-utils
	gcc make flex bison bc libelf-dev libssl-dev dwarves
	cpio ccache python3
	qemu-system-x86		# TCG (or KVM where it works) guest
	busybox-static		# guest userspace
	e2fsprogs		# mkfs.ext4 -d for the data disk
	erofs-utils		# mkfs.erofs: the same files where large folios are used
	libcmocka-dev		# host-side unit tests
	libjson-c-dev		# pagehintd parses QEMU's QMP with json-c
	clang-14 libclang-rt-14-dev	# libFuzzer for the host's fuzz targets
	libcap-dev		# static libcap for selftests/mm mlock-random-test
	pkg-config
	gnuplot-nox		# make bench and make run: host-resident memory over time
)

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$status" = installed ] || missing+=("$p")
done

[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
else
	SUDO=
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
	"${missing[@]}" >/dev/null
