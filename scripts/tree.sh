#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The project's two patched trees: Debian's sources with a series of
# commits on top.
#
#   linux  build/linux, from linux-source-6.12 (kernel/patches)
#   qemu   build/qemu, from Debian's qemu source package, as dpkg-source
#          unpacks it with Debian's own patches applied (qemu/patches)
#
# Each tree is a git repository whose first commit (tag "pristine") is the
# source exactly as Debian ships it.  The project's changes are the commits
# on top of it; KIND/patches holds them as git format-patch files plus a
# series file, and KIND/BASE the Debian version they are made against.
#
#   tree.sh KIND prepare   unpack if needed; re-apply the series when it changed
#   tree.sh KIND export    write the tree's commits into KIND/patches
#   tree.sh KIND check     fail when the tree and KIND/patches differ
#
# The tree and the series are compared by the hash of their format-patch
# text.  The hash of the series that was last applied or exported is kept
# in the tree's .git, so "the series changed" (re-apply) and "the tree has
# commits nobody exported" (stop, never throw them away) can be told apart.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:-}
case $kind in
linux)
	tree=$top/build/linux
	patches=$top/kernel/patches
	base_version=$(cat "$top/kernel/BASE")
	tarball=${PAGEHINT_LINUX_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
	;;
qemu)
	tree=$top/build/qemu
	patches=$top/qemu/patches
	base_version=$(cat "$top/qemu/BASE")
	srcdir=$top/build/qemu-src
	;;
*)
	echo "usage: $0 linux|qemu prepare|export|check" >&2
	exit 2
	;;
esac
synced=$tree/.git/pagehint-synced
# where the wrapper a user runs lives: kernel/tree.sh, qemu/tree.sh
kind_dir=${patches#"$top"/}
kind_dir=${kind_dir%/patches}

die() { echo "tree: $*" >&2; exit 1; }
note() { echo "tree: $*" >&2; }

git_tree() {
	git -C "$tree" -c user.name=pagehint -c user.email=pagehint@localhost \
		-c advice.detachedHead=false "$@"
}

installed_version() {
	case $kind in
	linux) dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || echo unknown ;;
	qemu) echo "${qemu_version:-$base_version}" ;;
	esac
}

# Debian's .gitignore of the kernel ignores every top-level path ("/*": its
# packaging repository holds only debian/), which would hide every file a
# patch adds.  Drop that rule from the working copy only; the pristine
# commit keeps the file as packaged and git is told not to see the local
# edit.  QEMU's .gitignore hides nothing a patch adds.
unhide_new_files() {
	[ "$kind" = linux ] || return 0
	git_tree update-index --no-skip-worktree .gitignore
	git_tree checkout -q -- .gitignore
	sed -i '/^\/\*$/d; /^!\/debian\/$/d' "$tree/.gitignore"
	git_tree update-index --skip-worktree .gitignore
}

check_base_version() {
	[ "$kind" = linux ] || return 0
	local have
	have=$(installed_version)
	[ "$have" = "$base_version" ] && return 0
	note "WARNING: the series is made against linux-source-6.12 $base_version,"
	note "WARNING: but $have is installed; patches may not apply or may mean something else."
}

# Hash of a directory of format-patch files in series order.  Only the
# patch text counts: format-patch is run with --zero-commit, so the hash
# does not change when the same commits are re-applied, and --full-index,
# because abbreviated blob names grow with the number of objects and a
# fresh tree has fewer than a worked-in one.
series_hash() {
	local dir=$1
	if [ -f "$dir/series" ]; then
		(cd "$dir" && grep -v '^\s*\(#\|$\)' series | xargs -r cat)
	fi | sha256sum | cut -d' ' -f1
}

format_tree() {
	local out=$1
	mkdir -p "$out"
	git_tree format-patch -q --zero-commit --no-signature --full-index -o "$out" pristine..HEAD
	(cd "$out" && ls -1 *.patch 2>/dev/null || true) > "$out/series"
}

tree_hash() {
	local tmp h
	tmp=$(mktemp -d)
	format_tree "$tmp"
	h=$(series_hash "$tmp")
	rm -rf "$tmp"
	echo "$h"
}

# Debian's qemu source package, at the version of qemu/BASE, or, once the
# archive has moved on, the version it has (with a warning, as for the
# kernel).  apt-get source needs a deb-src entry (scripts/deps.sh adds
# one).  Prints the .dsc.
fetch_qemu_source() {
	local dsc=$srcdir/qemu_${base_version#*:}.dsc
	if [ ! -f "$dsc" ]; then
		note "fetching Debian's qemu source $base_version (23 MB)"
		mkdir -p "$srcdir"
		if ! (cd "$srcdir" && apt-get source -qq --download-only "qemu=$base_version" \
			>/dev/null 2>&1); then
			note "WARNING: qemu $base_version is not in the archive; taking its current qemu"
			(cd "$srcdir" && apt-get source -qq --download-only qemu >/dev/null 2>&1) ||
				die "apt-get source qemu failed: is there a deb-src entry (scripts/deps.sh)?"
			dsc=$(ls -1 "$srcdir"/qemu_*.dsc | tail -1)
		fi
	fi
	[ -f "$dsc" ] || die "apt-get source left no $dsc"
	echo "$dsc"
}

unpack_source() {
	case $kind in
	linux)
		[ -f "$tarball" ] ||
			die "$tarball is missing: install Debian's linux-source-6.12 (scripts/deps.sh)"
		note "unpacking $tarball (once; about a minute)"
		mkdir -p "$tree.tmp"
		tar -C "$tree.tmp" --strip-components=1 -xf "$tarball"
		;;
	qemu)
		local dsc
		dsc=$(fetch_qemu_source)
		qemu_version=$(sed -n 's/^Version: //p' "$dsc")
		note "unpacking $(basename "$dsc") (once)"
		# (gpgv cannot check the signature: the keyring is not installed;
		# apt checked the files against the signed archive index)
		dpkg-source -q -x "$dsc" "$tree.tmp" >/dev/null 2>&1 ||
			die "dpkg-source could not unpack $dsc"
		# quilt's bookkeeping of Debian's patches, not source
		rm -rf "$tree.tmp/.pc"
		;;
	esac
}

unpack() {
	check_base_version
	rm -rf "$tree.tmp"
	unpack_source
	git -C "$tree.tmp" init -q
	git -C "$tree.tmp" config gc.auto 0
	# -f: the pristine commit is the package as shipped, .gitignore or not.
	git -C "$tree.tmp" add -f -A .
	git -C "$tree.tmp" -c user.name=pagehint -c user.email=pagehint@localhost \
		commit -q -m "$kind $(installed_version) as packaged by Debian"
	git -C "$tree.tmp" tag pristine
	git -C "$tree.tmp" config core.autocrlf false
	echo "$(installed_version)" > "$tree.tmp/.git/pagehint-base"
	mv "$tree.tmp" "$tree"
	unhide_new_files
	# A fresh tree carries no commits of ours: it is in sync with an
	# empty series, so prepare() applies the series to it.
	tree_hash > "$synced"
}

apply_series() {
	git_tree update-index --no-skip-worktree .gitignore
	git_tree reset -q --hard pristine
	if [ -f "$patches/series" ]; then
		local p
		for p in $(grep -v '^\s*\(#\|$\)' "$patches/series"); do
			git_tree am -q --committer-date-is-author-date "$patches/$p" ||
				{ git_tree am --abort || true; die "$p does not apply (see above)"; }
		done
	fi
	unhide_new_files
	# What was applied, as format-patch writes it back: a patch edited by
	# hand (its index lines name the blobs before the edit, say) applies
	# fine but does not come back byte for byte, and recording the hash of
	# the files would make the very commits applied here look unexported.
	tree_hash > "$synced"
}

prepare() {
	[ -d "$tree/.git" ] || unpack
	# git commit and git am would start an automatic gc of the
	# 90,000-file pristine commit in the background, which repacks refs
	# under a concurrent format-patch and made "tree.sh check" fail at
	# random.  (Set again here for trees unpacked before this.)
	git_tree config gc.auto 0
	local tree_base want have last
	tree_base=$(cat "$tree/.git/pagehint-base" 2>/dev/null || echo unknown)
	[ "$tree_base" = "$base_version" ] ||
		note "WARNING: ${tree#"$top"/} was unpacked from $tree_base, the series is for $base_version"
	want=$(series_hash "$patches")
	have=$(tree_hash)
	[ "$want" = "$have" ] && { echo "$want" > "$synced"; return 0; }
	last=$(cat "$synced" 2>/dev/null || echo none)
	# A tree at pristine has no commits to lose, whatever the record
	# says: that is where the advice below leaves it.
	if [ "$have" != "$last" ] &&
	   [ "$(git_tree rev-parse HEAD)" != "$(git_tree rev-parse 'pristine^{commit}')" ]; then
		die "${tree#"$top"/} has commits that are not in ${patches#"$top"/}.
Export them with '$kind_dir/tree.sh export', or drop them with 'git -C ${tree#"$top"/} reset --hard pristine' (either from $top)."
	fi
	[ -z "$(git_tree status --porcelain --untracked-files=no)" ] ||
		die "${patches#"$top"/} changed but ${tree#"$top"/} has uncommitted changes; commit or stash them first"
	note "${patches#"$top"/} changed: re-applying the series"
	apply_series
}

export_series() {
	[ -d "$tree/.git" ] || die "no tree to export; run '$kind_dir/tree.sh prepare' (from $top)"
	[ -z "$(git_tree status --porcelain --untracked-files=no)" ] ||
		note "WARNING: ${tree#"$top"/} has uncommitted changes; only commits are exported"
	local tmp
	tmp=$(mktemp -d)
	format_tree "$tmp"
	rm -f "$patches"/*.patch "$patches/series"
	mkdir -p "$patches"
	cp "$tmp"/* "$patches"/ 2>/dev/null || true
	rm -rf "$tmp"
	series_hash "$patches" > "$synced"
	note "exported $(grep -c . "$patches/series" || true) patches to ${patches#"$top"/}"
}

check() {
	[ -d "$tree/.git" ] || die "no tree; run '$kind_dir/tree.sh prepare' (from $top)"
	local want have
	want=$(series_hash "$patches")
	have=$(tree_hash)
	[ "$want" = "$have" ] && return 0
	die "${tree#"$top"/} and ${patches#"$top"/} differ: '$kind_dir/tree.sh export' to save the tree, '$kind_dir/tree.sh prepare' to take the series (from $top)"
}

case "${2:-}" in
prepare) prepare ;;
export) export_series ;;
check) check ;;
*) echo "usage: $0 linux|qemu prepare|export|check" >&2; exit 2 ;;
esac
