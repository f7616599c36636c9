#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build build/qemu-obj/qemu-system-s390x from build/qemu (qemu/tree.sh):
# Debian's QEMU with the project's patches, the s390x system emulator
# only, TCG only, without the optional features, with ccache.  About
# 2.5 minutes on two cores the first time.
#
# The build is skipped when the tree's HEAD and these flags are those of
# the binary there: nothing but the patches changes the build.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
tree=$top/build/qemu
obj=$top/build/qemu-obj
bin=$obj/qemu-system-s390x
flags=(--target-list=s390x-softmmu --without-default-features --enable-tcg
       --enable-fdt=system --disable-docs --disable-tools --disable-user
       --disable-werror --cc="ccache gcc" --host-cc="ccache gcc")

export CCACHE_BASEDIR=$top
export CCACHE_NOHASHDIR=1
stamp=$obj/.pagehint-inputs
inputs=$(git -C "$tree" rev-parse HEAD; git -C "$tree" status --porcelain --untracked-files=no;
	 echo "${flags[*]}")
if [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$inputs" ]; then
	exit 0
fi
mkdir -p "$obj"
if [ ! -f "$obj/build.ninja" ]; then
	echo "qemu: configuring s390x-softmmu"
	(cd "$obj" && "$tree/configure" "${flags[@]}" > configure.log 2>&1) ||
		{ tail -20 "$obj/configure.log" >&2; echo "qemu: configure failed" >&2; exit 1; }
fi
echo "qemu: building qemu-system-s390x"
ninja -C "$obj" -j"$(($(nproc) + 1))" qemu-system-s390x > "$obj/ninja.log" 2>&1 ||
	{ grep -B2 -A12 -m3 'error' "$obj/ninja.log" >&2 || tail -30 "$obj/ninja.log" >&2
	  echo "qemu: build failed (build/qemu-obj/ninja.log)" >&2; exit 1; }
echo "$inputs" > "$stamp"
echo "qemu: $bin"
