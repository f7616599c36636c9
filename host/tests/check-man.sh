#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
#   host/tests/check-man.sh
#
# pagehintd(8), host/pagehintd.8, as Debian would check it: mandoc's lint
# and groff's warnings say nothing (lintian runs both kinds), it renders,
# it has the sections an operator looks for, and it describes exactly the
# options that the pagehintd that is installed (build/host/pagehintd)
# explains in --help: an option added to one and not the other fails.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
page=$top/host/pagehintd.8
daemon=$top/build/host/pagehintd
status=0

fail() {
	echo "check-man: $*"
	status=1
}

if [ ! -x "$daemon" ]; then
	echo "check-man: $daemon is missing: run make host"
	exit 1
fi

out=$(mandoc -Tlint -W style "$page" 2>&1) || fail "mandoc -Tlint failed"
[ -z "$out" ] || fail "mandoc -Tlint: $out"
out=$(groff -man -ww -z "$page" 2>&1) || fail "groff -ww failed"
[ -z "$out" ] || fail "groff -ww: $out"
rendered=$(mandoc -Tutf8 "$page" | col -b)
for section in NAME SYNOPSIS DESCRIPTION OPTIONS 'EXIT STATUS' SIGNALS ENVIRONMENT FILES; do
	printf '%s\n' "$rendered" | grep -qx "$section" || fail "no $section section"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# --help: an option's line under "Options:" starts with two spaces and --
"$daemon" --help | sed -n '/^Options:$/,$p' |
	sed -n 's/^  --\([a-z-]*\).*/\1/p' | sort >"$work/help"
# the page: an option is a tagged paragraph whose tag is .B or .BI \-\-name
sed -n '/^\.SH OPTIONS$/,/^\.SH /{/^\.TP$/{n;s/^\.BI\{0,1\} \\-\\-\([a-z\\-]*\).*/\1/p}}' "$page" |
	sed 's/\\-/-/g' | sort >"$work/man"
[ -s "$work/help" ] || fail "no options in pagehintd --help"
missing=$(comm -23 "$work/help" "$work/man" | tr '\n' ' ')
extra=$(comm -13 "$work/help" "$work/man" | tr '\n' ' ')
[ -z "$missing" ] || fail "options --help explains and pagehintd.8 does not: $missing"
[ -z "$extra" ] || fail "options pagehintd.8 describes and pagehintd does not take: $extra"

[ $status -ne 0 ] ||
	echo "check-man: pagehintd.8 lints clean and describes its $(wc -l <"$work/man") options"
exit $status
