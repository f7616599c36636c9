#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
#   host/tests/check-header.sh
#
# pagehintd carries its own copy of the table format,
# host/include/linux/pagehint.h, so that a hypervisor builds it without
# the kernel tree.  The format is defined by the patch series
# (include/uapi/linux/pagehint.h, created by one patch and changed by
# later ones): rebuild that file from kernel/patches alone, in series
# order, and fail unless the copy is the same, byte for byte.  Needs git
# only (git apply), no kernel tree.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
uapi=include/uapi/linux/pagehint.h
copy=$top/host/include/linux/pagehint.h

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# a repository of its own: git apply then works relative to it, wherever
# TMPDIR is
git init -q "$work"
while read -r patch; do
	case $patch in '' | '#'*) continue ;; esac
	git -C "$work" apply --include="$uapi" "$top/kernel/patches/$patch"
done <"$top/kernel/patches/series"

if [ ! -f "$work/$uapi" ]; then
	echo "check-header: no patch in kernel/patches/series creates $uapi"
	exit 1
fi
if ! diff -u "$work/$uapi" "$copy"; then
	echo "check-header: host/include/linux/pagehint.h differs from the series' $uapi:"
	echo "check-header: after make tree: cp build/linux/$uapi host/include/linux/"
	exit 1
fi
echo "check-header: host/include/linux/pagehint.h is the series' $uapi"
