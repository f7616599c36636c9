#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
#   host/tests/check-install.sh
#
# make -C host install, as a package build (DESTDIR, PREFIX=/usr) would
# run it: the daemon, its units, libvirt's hook and its man page where
# Debian keeps them, the units and the hook naming the daemon where it is
# installed, and the daemon the one without test hooks.  Then the units
# as systemd reads them:
# systemd-analyze verify (it needs no systemd running as PID 1) of a
# copy installed under a prefix of its own, so that the programs it names
# exist, must say nothing.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
status=0

fail() {
	echo "check-install: $*"
	status=1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

dest=$work/dest
make -s --no-print-directory -C "$top/host" install DESTDIR="$dest" PREFIX=/usr >"$work/log" 2>&1 ||
	{ cat "$work/log"; fail "make install DESTDIR=... PREFIX=/usr failed"; exit 1; }
for f in usr/sbin/pagehintd:755 usr/lib/systemd/system/pagehintd@.service:644 \
	 usr/lib/systemd/system/pagehintd.service:644 etc/libvirt/hooks/qemu.d/pagehint:755 \
	 usr/share/man/man8/pagehintd.8:644; do
	path=$dest/${f%:*}
	if [ ! -f "$path" ]; then
		fail "make install put no /${f%:*}"
	elif [ "$(stat -c %a "$path")" != "${f#*:}" ]; then
		fail "/${f%:*} has mode $(stat -c %a "$path"), not ${f#*:}"
	fi
done
extra=$(cd "$dest" && find . -type f | grep -v -e '^./usr/sbin/pagehintd$' \
	-e '^./usr/lib/systemd/system/pagehintd@.service$' \
	-e '^./usr/lib/systemd/system/pagehintd.service$' \
	-e '^./etc/libvirt/hooks/qemu.d/pagehint$' \
	-e '^./usr/share/man/man8/pagehintd.8$' || true)
[ -z "$extra" ] || fail "make install put more: $extra"
grep -qx 'ExecStart=/usr/sbin/pagehintd run --name %i $PAGEHINTD_ARGS' \
	"$dest/usr/lib/systemd/system/pagehintd@.service" ||
	fail "the unit does not start /usr/sbin/pagehintd"
grep -qx 'ExecStart=/usr/sbin/pagehintd host $PAGEHINTD_ARGS' \
	"$dest/usr/lib/systemd/system/pagehintd.service" ||
	fail "the host unit does not start /usr/sbin/pagehintd host"
grep -qx 'exec /usr/sbin/pagehintd libvirt-hook "$@"' "$dest/etc/libvirt/hooks/qemu.d/pagehint" ||
	fail "the libvirt hook does not run /usr/sbin/pagehintd libvirt-hook"
# the hook as libvirt runs it: a domain that is not hinted is left alone
echo "<domain type='kvm'><name>plain</name></domain>" |
	PATH=$dest/usr/sbin:$PATH sh -c "sed 's|/usr/sbin/|$dest/usr/sbin/|' \
	$dest/etc/libvirt/hooks/qemu.d/pagehint > $work/hook && sh $work/hook plain start begin -" ||
	fail "the hook fails a domain that is not hinted"
if "$dest/usr/sbin/pagehintd" --help | grep -q stop-after-claiming; then
	fail "the installed pagehintd has the test hooks"
fi
"$dest/usr/sbin/pagehintd" --version | grep -q '^pagehintd ' ||
	fail "the installed pagehintd has no --version"

prefix=$work/prefix
make -s --no-print-directory -C "$top/host" install PREFIX="$prefix" \
	HOOKDIR="$prefix/etc/libvirt/hooks/qemu.d" >"$work/log" 2>&1 ||
	{ cat "$work/log"; fail "make install PREFIX=... failed"; exit 1; }
for unit in pagehintd@.service pagehintd.service; do
	# MANPATH: verify checks that Documentation=man:pagehintd(8) exists
	out=$(MANPATH=$prefix/share/man systemd-analyze verify \
	      "$prefix/lib/systemd/system/$unit" 2>&1) ||
		fail "systemd-analyze verify $unit failed: $out"
	[ -z "$out" ] || fail "systemd-analyze verify $unit: $out"
done

[ $status -ne 0 ] || echo "check-install: make install puts pagehintd, its units, libvirt's hook" \
	"and its man page in place; systemd-analyze verify accepts both units"
exit $status
