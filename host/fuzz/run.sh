#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
#   host/fuzz/run.sh LIBFUZZER-OPTION...
#
# Runs each fuzz target (make host builds them in build/host/fuzz) over a
# scratch copy of its seed corpus, host/fuzz/corpus/NAME, so that the
# inputs libFuzzer finds never land in the repository.  A crash leaves its
# input in build/host/fuzz/work-NAME/ and fails the run.  make check runs
# it with -runs=N, make fuzz with -max_total_time=S.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
status=0
for name in header qmp; do
	work=$top/build/host/fuzz/work-$name
	rm -rf "$work"
	mkdir -p "$work/corpus"
	cp "$top/host/fuzz/corpus/$name/"* "$work/corpus/"
	echo "fuzz: $name"
	"$top/build/host/fuzz/fuzz_$name" -artifact_prefix="$work/" "$@" "$work/corpus" ||
		status=1
done
exit $status
