#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
#   host/tests/check-install.sh
#
# make -C host install, as a package build (DESTDIR, PREFIX=/usr) would
# run it: the daemon, its unit and its man page where Debian keeps them,
# the unit naming the daemon where it is installed, and the daemon the
# one without test hooks.  Then the unit as systemd reads it:
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
	-e '^./usr/share/man/man8/pagehintd.8$' || true)
[ -z "$extra" ] || fail "make install put more: $extra"
grep -qx 'ExecStart=/usr/sbin/pagehintd run --name %i $PAGEHINTD_ARGS' \
	"$dest/usr/lib/systemd/system/pagehintd@.service" ||
	fail "the unit does not start /usr/sbin/pagehintd"
if "$dest/usr/sbin/pagehintd" --help | grep -q stop-after-claiming; then
	fail "the installed pagehintd has the test hooks"
fi
"$dest/usr/sbin/pagehintd" --version | grep -q '^pagehintd ' ||
	fail "the installed pagehintd has no --version"

prefix=$work/prefix
make -s --no-print-directory -C "$top/host" install PREFIX="$prefix" >"$work/log" 2>&1 ||
	{ cat "$work/log"; fail "make install PREFIX=... failed"; exit 1; }
unit=$prefix/lib/systemd/system/pagehintd@.service
# MANPATH: verify checks that Documentation=man:pagehintd(8) exists
out=$(MANPATH=$prefix/share/man systemd-analyze verify "$unit" 2>&1) ||
	fail "systemd-analyze verify failed: $out"
[ -z "$out" ] || fail "systemd-analyze verify: $out"

[ $status -ne 0 ] || echo "check-install: make install puts pagehintd, its unit and man page" \
	"in place; systemd-analyze verify accepts the unit"
exit $status
