#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build every prefix of the series, as a reviewer bisecting it would: each
# patch must build on its own.  Then build the whole series twice more,
# with CONFIG_PAGE_STATES_VOLATILE off and with CONFIG_PAGE_STATES off, so
# the stubs that core mm sees in those configurations build too.
#
# The commits are build/linux's (kernel/tree.sh check says they are the
# series), checked out one after another in a second worktree,
# build/each/linux, and built incrementally in build/each/obj with the
# release configuration.  A patch that touches a header most of the kernel
# includes costs a near-full build, so this takes an hour or more on two
# cores; it is not part of "make check".
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
tree=$top/build/linux
each=$top/build/each
wt=$each/linux

"$top/kernel/tree.sh" check
mkdir -p "$each"
if [ ! -d "$wt" ]; then
	git -C "$tree" worktree prune	# after "make clean"
	git -C "$tree" worktree add -q --detach "$wt" pristine
fi
# The same local .gitignore edit as build/linux (kernel/tree.sh): Debian's
# "/*" rule would hide the files the series adds.
cp "$tree/.gitignore" "$wt/.gitignore"

build() {
	local what=$1 log=$each/build.log
	shift
	if env BUILD_TREE="$wt" BUILD_OBJ="$each/obj" "$@" \
		"$top/kernel/build.sh" release >"$log" 2>&1; then
		echo "build-each: ok    $what"
	else
		echo "build-each: FAIL  $what" >&2
		grep -E 'error|Error' "$log" | head -20 >&2
		exit 1
	fi
}

for commit in $(git -C "$tree" rev-list --reverse pristine..HEAD); do
	git -C "$wt" checkout -q --detach "$commit"
	build "$(git -C "$wt" log -1 --format=%s)" BUILD_LENIENT=1
done

off=$each/off.config
printf '# CONFIG_%s is not set\n' PAGE_STATES_VOLATILE PAGE_STATES_DEBUG \
	PAGE_STATES_KUNIT_TEST >"$off"
build "the series, CONFIG_PAGE_STATES_VOLATILE off" BUILD_FRAGMENT="$off"
printf '# CONFIG_%s is not set\n' PAGE_STATES PAGE_STATES_VOLATILE PAGE_STATES_DEBUG \
	PAGEHINT_IVSHMEM PAGE_STATES_KUNIT_TEST PAGEHINT_KUNIT_TEST >"$off"
build "the series, CONFIG_PAGE_STATES off" BUILD_FRAGMENT="$off"
