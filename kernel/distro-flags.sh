#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Does PG_cache_volatile fit page->flags on a distribution kernel?
#
# The guest config is tinyconfig-based and leaves page->flags half empty.
# Debian's own amd64 configuration (package linux-config-6.12: 1024 NUMA
# nodes, 8192 CPUs, ZONE_DEVICE, MGLRU, NUMA balancing) does not.  When
# page->flags runs out, the kernel does not fail the build: it moves the
# NUMA-balancing cpupid out into struct page (LAST_CPUPID_NOT_IN_PAGE_FLAGS,
# a bigger struct page for every frame), and it narrows MGLRU's reference
# tiers (LRU_REFS_WIDTH).  So this builds the series' mm objects with
# Debian's configuration plus the volatile page cache, prints the layout
# of page->flags, and fails if either of those happened, or if an object
# does not build.
#
# Module signing is turned off: it needs Debian's certificates, and takes
# no bit of page->flags.
#
# Output: build/obj-distro (about 3 minutes the first time, ccache after).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
tree=${BUILD_TREE:-$top/build/linux}
obj=$top/build/obj-distro
config=/usr/src/linux-config-6.12/config.amd64_none_amd64.xz

[ -f "$config" ] || { echo "distro-flags: $config missing (package linux-config-6.12)" >&2; exit 1; }

export CCACHE_BASEDIR=$top
export CCACHE_NOHASHDIR=1
export KBUILD_BUILD_TIMESTAMP="2026-01-01"
jobs=$(($(nproc) + 1))
kmake() {
	make -s -C "$tree" O="$obj" ARCH=x86_64 CC="ccache gcc" HOSTCC="ccache gcc" \
		-j"$jobs" "$@"
}

mkdir -p "$obj"
xz -dc "$config" > "$obj/.config.debian"
if ! cmp -s "$obj/.config.debian" "$obj/.config.input" 2>/dev/null || [ ! -f "$obj/.config" ]; then
	cp "$obj/.config.debian" "$obj/.config"
	"$tree/scripts/config" --file "$obj/.config" \
		--disable MODULE_SIG \
		--set-str SYSTEM_TRUSTED_KEYS "" --set-str SYSTEM_REVOCATION_KEYS "" \
		--enable PAGE_STATES --enable PAGE_STATES_VOLATILE
	kmake olddefconfig >/dev/null
	cp "$obj/.config.debian" "$obj/.config.input"
fi
for opt in PAGE_STATES PAGE_STATES_VOLATILE NUMA_BALANCING LRU_GEN HIBERNATION; do
	grep -qx "CONFIG_$opt=y" "$obj/.config" ||
		{ echo "distro-flags: CONFIG_$opt is not on in Debian's config here" >&2; exit 1; }
done

# The series' mm objects: every .c under mm/ that it changes or adds.
objects=$(git -C "$tree" diff --name-only pristine HEAD -- mm | sed -n 's/\.c$/.o/p' |
	  grep -v _kunit)
echo "distro-flags: building $(echo "$objects" | wc -w) mm objects with Debian's amd64 config"
# shellcheck disable=SC2086
kmake $objects

# The layout as the compiler sees it, with the flags of a real object.
probe=$obj/flags_probe
cat > "$probe.c" <<'EOF'
#include <linux/mm.h>
#define SHOW(sym) asm volatile("\n.ascii \"->" #sym " %0\"" : : "i" (sym))
void flags_probe(void);
void flags_probe(void)
{
	SHOW(BITS_PER_LONG);
	SHOW(NR_PAGEFLAGS);
	SHOW(SECTIONS_WIDTH);
	SHOW(NODES_WIDTH);
	SHOW(ZONES_WIDTH);
	SHOW(LRU_GEN_WIDTH);
	SHOW(KASAN_TAG_WIDTH);
	SHOW(LAST_CPUPID_SHIFT);
	SHOW(LAST_CPUPID_WIDTH);
	SHOW(__LRU_REFS_WIDTH);
	SHOW(LRU_REFS_WIDTH);
	SHOW(PG_cache_volatile);
}
EOF
cmd=$(sed -n 's/^savedcmd_mm\/page_states_volatile.o := //p' "$obj/mm/.page_states_volatile.o.cmd")
cmd=${cmd%%;*}
cmd=$(echo "$cmd" | sed -e 's/-Wp,-MMD,[^ ]*//' -e 's/ -c -o [^ ]* [^ ]* *$//')
(cd "$obj" && eval "$cmd -S -o $probe.s $probe.c")
declare -A v
while read -r name value; do
	v[$name]=$value
done < <(sed -n 's/.*->\([A-Za-z_]*\) \$\{0,1\}\([0-9]*\).*/\1 \2/p' "$probe.s")
for k in BITS_PER_LONG NR_PAGEFLAGS LAST_CPUPID_SHIFT LAST_CPUPID_WIDTH LRU_REFS_WIDTH; do
	[ -n "${v[$k]:-}" ] || { echo "distro-flags: the probe did not say $k" >&2; exit 1; }
done
used=$((v[NR_PAGEFLAGS] + v[SECTIONS_WIDTH] + v[NODES_WIDTH] + v[ZONES_WIDTH] +
	v[LRU_GEN_WIDTH] + v[KASAN_TAG_WIDTH] + v[LAST_CPUPID_WIDTH] + v[LRU_REFS_WIDTH]))
echo "distro-flags: page->flags with Debian's amd64 config and the volatile page cache:"
echo "    ${v[NR_PAGEFLAGS]} flags (PG_cache_volatile is bit ${v[PG_cache_volatile]})," \
     "nodes ${v[NODES_WIDTH]}, zones ${v[ZONES_WIDTH]}, sections ${v[SECTIONS_WIDTH]}," \
     "MGLRU gen ${v[LRU_GEN_WIDTH]} and refs ${v[LRU_REFS_WIDTH]}/${v[__LRU_REFS_WIDTH]}," \
     "KASAN tag ${v[KASAN_TAG_WIDTH]}, cpupid ${v[LAST_CPUPID_WIDTH]}/${v[LAST_CPUPID_SHIFT]}"
echo "    $used of ${v[BITS_PER_LONG]} bits used, $((v[BITS_PER_LONG] - used)) spare"
fail=0
if [ "${v[LAST_CPUPID_WIDTH]}" != "${v[LAST_CPUPID_SHIFT]}" ]; then
	echo "distro-flags: the cpupid no longer fits page->flags: struct page grows" >&2
	fail=1
fi
if [ "${v[LRU_REFS_WIDTH]}" != "${v[__LRU_REFS_WIDTH]}" ]; then
	echo "distro-flags: MGLRU loses reference tiers (LRU_REFS_WIDTH ${v[LRU_REFS_WIDTH]} < ${v[__LRU_REFS_WIDTH]})" >&2
	fail=1
fi
[ $fail = 0 ] && echo "distro-flags: PG_cache_volatile fits"
exit $fail
