#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the guest kernel out of tree: build/obj-VARIANT/arch/ARCH/boot/bzImage.
#   release  kernel/config/guest.config
#   debug    guest.config + debug.config (DEBUG_VM, lockdep): what the tests boot
#   s390     kernel/config/s390.config, cross-built with Debian's s390x gcc
#
# The .config is regenerated only when a fragment or the tree's Kconfig
# changed, so an unchanged tree rebuilds in seconds.
#
# kernel/build-each.sh builds other trees and configurations with this
# script: BUILD_TREE and BUILD_OBJ replace build/linux and build/obj-VARIANT,
# BUILD_FRAGMENT is one more config fragment, applied last, and
# BUILD_LENIENT=1 accepts options the tree does not know yet (a tree with
# only the first patches of the series).  ccache is keyed on
# paths relative to the repository, so a fresh clone on the same machine
# (CI) reuses the cache of the last one.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
variant=${1:-debug}
tree=${BUILD_TREE:-$top/build/linux}
obj=${BUILD_OBJ:-$top/build/obj-$variant}
cfgdir=$top/kernel/config

arch=x86_64 cross=
case $variant in
release) fragments=("$cfgdir/guest.config") ;;
debug) fragments=("$cfgdir/guest.config" "$cfgdir/debug.config") ;;
s390) fragments=("$cfgdir/s390.config"); arch=s390 cross=s390x-linux-gnu- ;;
*) echo "build: unknown variant '$variant' (release, debug or s390)" >&2; exit 2 ;;
esac
[ -n "${BUILD_FRAGMENT:-}" ] && fragments+=("$BUILD_FRAGMENT")

export CCACHE_BASEDIR=$top
export CCACHE_NOHASHDIR=1
export CCACHE_SLOPPINESS=time_macros
export KBUILD_BUILD_TIMESTAMP="2026-01-01"
export KBUILD_BUILD_USER=pagehint KBUILD_BUILD_HOST=pagehint
command -v ccache >/dev/null && ccache --max-size=8G >/dev/null
jobs=$(($(nproc) + 1))
kmake() {
	make -s -C "$tree" O="$obj" ARCH=$arch CROSS_COMPILE=$cross CC="ccache ${cross}gcc" \
		HOSTCC="ccache gcc" -j"$jobs" "$@"
}

mkdir -p "$obj"
stamp=$obj/.config.inputs
inputs=$(cat "${fragments[@]}" | sha256sum; git -C "$tree" rev-parse HEAD)
if [ ! -f "$obj/.config" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$inputs" ]; then
	echo "build: configuring $variant kernel"
	kmake tinyconfig >/dev/null
	KCONFIG_CONFIG=$obj/.config "$tree/scripts/kconfig/merge_config.sh" -m -O "$obj" \
		"$obj/.config" "${fragments[@]}" >/dev/null
	kmake olddefconfig >/dev/null
	# merge_config only warns; an option that Kconfig overrode (a missing
	# dependency, or a select from elsewhere) must fail the build instead
	# of being missed.
	bad=0
	while IFS= read -r line; do
		grep -qxF "$line" "$obj/.config" && continue
		sym=$(echo "$line" | grep -oE 'CONFIG_[A-Za-z0-9_]+')
		got=$(grep -E "^$sym=|^# $sym is not set" "$obj/.config" || true)
		# Off and invisible (its dependencies are off) is off.
		[ -z "$got" ] && [ "${line#\# }" != "$line" ] && continue
		# An option that a later patch adds.
		[ -z "$got" ] && [ "${BUILD_LENIENT:-0}" = 1 ] &&
			! grep -rqE "^[[:space:]]*(menu)?config ${sym#CONFIG_}\b" \
				--include='Kconfig*' "$tree" && continue
		echo "build: asked for '$line', Kconfig made it '$got'" >&2
		bad=1
	done < <(cat "${fragments[@]}" | grep -E '^(CONFIG_|# CONFIG_.* is not set$)' |
		# A later fragment's line for the same option wins.
		awk '{ match($0, /CONFIG_[A-Za-z0-9_]+/); s = substr($0, RSTART, RLENGTH)
		       if (!(s in last)) order[n++] = s; last[s] = $0 }
		     END { for (i = 0; i < n; i++) print last[order[i]] }')
	[ $bad -eq 0 ] || { mv "$obj/.config" "$obj/.config.rejected"; exit 1; }
	echo "$inputs" > "$stamp"
fi
if grep -qx 'CONFIG_MODULES=y' "$obj/.config"; then
	kmake bzImage modules
else
	kmake bzImage
fi
echo "build: $obj/arch/${arch%_64}/boot/bzImage"
