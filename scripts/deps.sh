#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
#   scripts/deps.sh [host-build | host | all]
#
# Install what a target needs, and nothing that is already there.
# "apt-get update" runs only when a package is missing, so a warm machine
# pays one dpkg query per package and no network round trip.
#   host-build  building and installing pagehintd (make -C host pagehintd
#               install): what a hypervisor needs, nothing of the guest's
#   host        the host side with its tests (make host)
#   all         everything make check, run and bench use (the default)
set -eu

host_build=(
	gcc make pkg-config
	libjson-c-dev		# pagehintd parses QEMU's QMP with json-c
	libsystemd-dev		# sd_notify(): readiness and the watchdog under systemd
	libxml2-dev		# libvirt's domain XML (host mode)
	libvirt-dev		# host mode follows libvirt through its C API
)
host_test=(
	libcmocka-dev		# host-side unit tests
	clang-14 libclang-rt-14-dev	# libFuzzer for the host's fuzz targets
	git			# host/tests/check-header.sh rebuilds the table format from kernel/patches
	mandoc groff-base	# host/tests/check-man.sh lints pagehintd(8)
	systemd			# host/tests/check-install.sh: systemd-analyze verify of the unit
	libvirt-daemon libvirt-daemon-driver-qemu	# test_host and the libvirt stage start a private libvirtd
	libvirt-clients		# virsh: the libvirt stage defines and drives its domains
	# and promtool (test_metrics), below
)
guest=(
	linux-source-6.12	# the guest kernel the series applies to
	linux-config-6.12	# Debian's own configs: does the page flag fit? (kernel/distro-flags.sh)
	xz-utils
	flex bison bc libelf-dev libssl-dev dwarves
	cpio ccache python3
	qemu-system-x86		# TCG (or KVM where it works) guest
	busybox-static		# guest userspace
	e2fsprogs		# mkfs.ext4 -d for the data disk
	erofs-utils		# mkfs.erofs: the same files where large folios are used
	sqlite3			# with git and xz: data the guest's programs check themselves (guest/selfcheck)
	libcap-dev		# static libcap for selftests/mm mlock-random-test
	gnuplot-nox		# make bench and make run: host-resident memory over time
	# the s390 guest: cross-built kernel and programs, Debian's QEMU for
	# s390x (stock: no ESSA; its IPL firmware serves the project's build
	# too), and what building QEMU from Debian's source needs
	gcc-s390x-linux-gnu libc6-dev-s390x-cross
	qemu-system-misc qemu-system-data
	dpkg-dev meson ninja-build libglib2.0-dev libpixman-1-dev libfdt-dev zlib1g-dev
)

target=${1:-all}
case $target in
host-build) packages=("${host_build[@]}") ;;
host) packages=("${host_build[@]}" "${host_test[@]}") ;;
all) packages=("${host_build[@]}" "${host_test[@]}" "${guest[@]}") ;;
*)
	echo "deps: unknown target '$target' (host-build, host or all)" >&2
	exit 2
	;;
esac

if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
else
	SUDO=
fi

# qemu/tree.sh fetches Debian's qemu source (a deb-src entry), and the s390
# initramfs Debian's s390x busybox-static (the s390x architecture).
srclist=/etc/apt/sources.list.d/pagehint-deb-src.sources
need_update=
if [ "$target" = all ] && ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ &&
   ! grep -qs '^deb-src' /etc/apt/sources.list; then
	echo "deps: adding a deb-src entry for bookworm ($srclist)"
	printf '%s\n' 'Types: deb-src' 'URIs: http://deb.debian.org/debian' \
		'Suites: bookworm bookworm-updates' 'Components: main' \
		'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' | $SUDO tee "$srclist" >/dev/null
	need_update=1
fi
if [ "$target" = all ] && ! dpkg --print-foreign-architectures | grep -qx s390x; then
	echo "deps: adding the s390x architecture to dpkg (for busybox-static:s390x)"
	$SUDO dpkg --add-architecture s390x
	need_update=1
fi

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$status" = installed ] || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	$SUDO apt-get update -qq
	need_update=
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
fi
[ -z "$need_update" ] || $SUDO apt-get update -qq

# libvirtd's QEMU driver wants its user and its group even when qemu.conf
# says root, and without a qemu.conf (test_host) it runs QEMU as them
# (libvirt-daemon-system makes both, and would start a system libvirtd)
if [ "$target" != host-build ] && ! getent group libvirt-qemu >/dev/null; then
	echo "deps: adding the libvirt-qemu system group that libvirtd's QEMU driver needs"
	$SUDO groupadd --system libvirt-qemu
fi
if [ "$target" != host-build ] && ! getent passwd libvirt-qemu >/dev/null; then
	echo "deps: adding the libvirt-qemu system user that libvirtd's QEMU driver needs"
	getent group kvm >/dev/null || $SUDO groupadd --system kvm
	$SUDO useradd --system --no-create-home --home-dir /var/lib/libvirt \
		--shell /usr/sbin/nologin --gid kvm libvirt-qemu
fi

# promtool checks pagehintd's metrics (test_metrics).  It comes only with
# Debian's prometheus package, whose server a systemd machine would start
# on install and keep running: take the one program out of the package.
if [ "$target" != host-build ] && ! command -v promtool >/dev/null; then
	echo "deps: installing promtool, from Debian's prometheus package, as /usr/local/bin/promtool"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	chmod 755 "$tmp"	# apt's download user writes there
	(cd "$tmp" && { apt-get download -qq prometheus 2>/dev/null ||
			{ $SUDO apt-get update -qq && apt-get download -qq prometheus; }; })
	dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/root"
	$SUDO install -m 0755 "$tmp/root/usr/bin/promtool" /usr/local/bin/promtool
fi
