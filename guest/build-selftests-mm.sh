#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the kernel's own tools/testing/selftests/mm tests that the
# selftests-mm plan runs, statically linked, from the tree the guest
# kernel is built from: guest/build-selftests-mm.sh OUTDIR.
#
# The selftests Makefile is not used: it writes local_config.h/.mk into
# the source directory (the kernel tree must stay as the series left it)
# and builds some 50 programs where the plan needs 19.  Each program is compiled
# the way that Makefile does it (same flags, same helper objects, the
# sources named relative to their directory, as some tests build file
# names from __FILE__), one object at a time through ccache, then linked
# with -static.  The UAPI headers come from "make headers" into
# build/hdr, a directory of our own.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: $0 OUTDIR}
tree=$top/build/linux
src=$tree/tools/testing/selftests/mm
work=$top/build/selftests-mm
hdr=$top/build/hdr

# The programs: every one that the plan names after "/selftests/run
# [--OPTION VALUE]...".  Each links vm_util.c and thp_settings.c (as the
# selftests Makefile links them into every test), some one more source.
mapfile -t tests < <(sed -nE '/^#/d; s|.*/selftests/run (--[a-z]+ [^ ]+ )*([^ ;-][^ ;]*).*|\2|p' \
	"$top/guest/plans/selftests-mm" | sort -u)
declare -A extra=([uffd-unit-tests]=uffd-common.c [uffd-stress]=uffd-common.c)

export CCACHE_BASEDIR=$top
export CCACHE_NOHASHDIR=1
cc="gcc"
command -v ccache >/dev/null && cc="ccache gcc"

mkdir -p "$work/obj" "$out"
make -s -C "$tree" O="$hdr" headers
# No liburing in the guest: the io_uring variants of cow report a skip.
echo '// No liburing support: built by guest/build-selftests-mm.sh' > "$work/local_config.h"

cflags=(-Wall -O2 -U_FORTIFY_SOURCE -I "$tree" -I "$work"
	-isystem "$hdr/usr/include" -isystem "$tree/tools/include/uapi")

# The tests' own warnings (there are a few) go to a log, shown when the
# compiler fails.
compile() {
	local o=$work/obj/${1%.c}.o
	rm -f "$o"
	(cd "$src" && $cc "${cflags[@]}" -c -o "$o" "$1") >"$o.log" 2>&1 ||
		{ cat "$o.log" >&2; echo "selftests-mm: $1 does not compile" >&2; return 1; }
}

# Two at a time (the machine has two cores); ccache makes a rebuild of
# unchanged sources cost next to nothing.
pids=()
for c in vm_util.c thp_settings.c uffd-common.c "${tests[@]/%/.c}"; do
	compile "$c" &
	pids+=($!)
	if [ ${#pids[@]} -ge 2 ]; then
		wait "${pids[0]}"
		pids=("${pids[@]:1}")
	fi
done
for pid in "${pids[@]}"; do
	wait "$pid"
done
for t in "${tests[@]}"; do
	objs=("$work/obj/$t.o" "$work/obj/vm_util.o" "$work/obj/thp_settings.o")
	[ -z "${extra[$t]:-}" ] || objs+=("$work/obj/${extra[$t]%.c}.o")
	gcc -static -s -o "$out/$t" "${objs[@]}" -lrt -lpthread -lm -lcap
done
