#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Make the guest's disks in build/disks:
#   data.img    ext4 (mkfs.ext4 -d) with files of random content; their
#               checksums are in data.sha256, which the host keeps and the
#               initramfs carries, so a test that reads a file back can
#               tell a zero page from the real thing
#   data.erofs  the same files in EROFS, read-only: unlike ext4 in 6.12,
#               EROFS puts its files in large folios
#   swap.img    a swap partition
#   data/       the files themselves, which the host shares with some
#               guests over 9p (read-only)
# data.img also has progs/: data that real programs check themselves in the
# guest (guest/selfcheck): a packed git repository with history, an SQLite
# database with an index, and xz files with SHA-256 checks.
# The runs never write these: the launcher gives each run its own copy.
# DATA_MIB sizes the files, DISKS_DIR puts the disks elsewhere, and
# SOURCE_DIR adds a copy of a source tree as src/ (for the benchmark).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
out=${DISKS_DIR:-$top/build/disks}
data_mib=${DATA_MIB:-64}
swap_mib=${SWAP_MIB:-512}

mkdir -p "$out"
rm -rf "$out/data"
mkdir "$out/data"

# Sizes chosen to cover a single page, a partial last page, and files
# larger than any folio the page cache would use.
i=0
remaining=$((data_mib << 20))
for size in 4096 1 4095 4097 65536 1048576 3145851 $((16 << 20)); do
	[ "$size" -le "$remaining" ] || break
	head -c "$size" /dev/urandom > "$out/data/file$i"
	remaining=$((remaining - size))
	i=$((i + 1))
done
while [ "$remaining" -ge $((8 << 20)) ]; do
	head -c $((8 << 20)) /dev/urandom > "$out/data/file$i"
	remaining=$((remaining - (8 << 20)))
	i=$((i + 1))
done
(cd "$out/data" && sha256sum file*) > "$out/data.sha256"

# progs/: made with Debian's git, sqlite3 and xz (scripts/deps.sh), the
# programs the guest runs on them.  Random base64 text: zlib and xz keep
# about three quarters of it, and git's deltas find the lines a commit kept.
progs=$out/data/progs
mkdir -p "$progs/repo" "$progs/xz"
(
	cd "$progs/repo"
	export GIT_CONFIG_NOSYSTEM=1 HOME=$progs/repo GIT_AUTHOR_NAME=pagehint \
		GIT_AUTHOR_EMAIL=pagehint@localhost GIT_COMMITTER_NAME=pagehint \
		GIT_COMMITTER_EMAIL=pagehint@localhost
	git init -q -b main .
	for f in $(seq -w 0 47); do
		head -c 49152 /dev/urandom | base64 > "f$f"
	done
	git add . && git commit -q -m "48 files of 64 KiB"
	# 16 commits that each rewrite lines of six files: deltas in the pack
	for c in $(seq 1 16); do
		for f in $(shuf -i 0-47 -n 6); do
			f=f$(printf %02d "$f")
			line=$(head -c 57 /dev/urandom | base64)
			sed -i "$(shuf -i 1-800 -n 1)s|.*|$line|" "$f"
		done
		git commit -q -am "change $c"
	done
	git gc -q
)
sqlite3 "$progs/db.sqlite" "create table t(id integer primary key, k text, v blob);
	create index t_k on t(k);
	with recursive c(x) as (select 1 union all select x + 1 from c where x < 16000)
	insert into t(k, v) select hex(randomblob(8)), randomblob(200) from c;"
for x in 0 1 2 3; do
	head -c 786432 /dev/urandom | base64 | xz --check=sha256 -6 > "$progs/xz/text$x.xz"
done
progs_mib=$(du -sm "$progs" | cut -f1)

src_mib=0
if [ -n "${SOURCE_DIR:-}" ]; then
	cp -r "$SOURCE_DIR" "$out/data/src"
	src_mib=$(du -sm "$out/data/src" | cut -f1)
fi

rm -f "$out/data.img"
mkfs.ext4 -q -F -d "$out/data" -L pagehint-data "$out/data.img" $(((data_mib + progs_mib + src_mib) * 5 / 4 + 16))M >/dev/null
rm -f "$out/data.erofs"
mkfs.erofs --quiet --all-root --exclude-path=src --exclude-path=progs "$out/data.erofs" "$out/data" >/dev/null
# data/ stays: the guests of the volatile plan see it as a 9p share

rm -f "$out/swap.img"
truncate -s "${swap_mib}M" "$out/swap.img"
mkswap -q "$out/swap.img" 2>/dev/null || /sbin/mkswap -q "$out/swap.img"
echo "disks: $out/data.img ($i files, ${data_mib} MiB), $out/data.erofs, $out/swap.img (${swap_mib} MiB)"
