# SPDX-License-Identifier: GPL-2.0
#
# make run     boot a hinted guest with pagehintd; show what memory the
#              host got back
# make check   every test: host unit tests, the patch series, the guest,
#              KUnit, hinting end to end, and the runner's own self-test
# make bench   host-resident memory: no hinting, free page reporting,
#              pagehint; s390; density (writes docs/bench.md; hours, each
#              measurement kept per commit, so that a stopped one goes on)
# make bench-density  make bench's density section alone: how many guests
#              one host carries under a memory limit, by setup (prints it,
#              writes build/bench-density.md; hours)
# make fuzz    the host's fuzz targets, 10 minutes each
#
# Both install what they need first (scripts/deps.sh).

VARIANT ?= debug
B := build

.PHONY: all deps deps-host tree export kernel build-each host initramfs disks build qemu s390 check run bench bench-density fuzz clean help

all: build

help:
	@sed -n '3,13p' Makefile | sed 's/^# \{0,1\}//'

deps:
	@scripts/deps.sh all

# What the host side and its tests need, nothing of the guest's
deps-host:
	@scripts/deps.sh host

tree: deps
	@kernel/tree.sh prepare

export:
	@kernel/tree.sh export

kernel: tree
	@kernel/build.sh $(VARIANT)

# Every prefix of the series, and the series with the options off: an hour.
build-each: tree
	@kernel/build-each.sh

$(B)/disks/data.img $(B)/disks/data.sha256 $(B)/disks/data.erofs: guest/mkdisks.sh
	@guest/mkdisks.sh

disks: $(B)/disks/data.img

# pagehintd carries the table format (host/include, checked against the
# series by the host tests): no kernel tree, no cross toolchain.
host: deps-host
	@$(MAKE) --no-print-directory -s -C host

initramfs: kernel disks
	@guest/mkinitramfs.sh $(VARIANT)

build: initramfs host

# The s390 guest (tools/check.py's s390 stage): Debian's QEMU with
# qemu/patches, which emulates ESSA, and the cross-built s390 kernel.
qemu: deps
	@qemu/tree.sh prepare
	@qemu/build.sh

s390: tree qemu disks host
	@kernel/build.sh s390
	@guest/mkinitramfs.sh s390

check: deps
	@$(MAKE) --no-print-directory build VARIANT=debug
	@$(MAKE) --no-print-directory s390
	@tools/check.py all

# The same debug kernel as the tests: one kernel build serves both.
run: deps
	@$(MAKE) --no-print-directory build VARIANT=debug
	@tools/run.py --variant debug

# The host's fuzz targets (header check, QMP parser), 10 minutes each.
fuzz: host
	@host/fuzz/run.sh -max_total_time=600

bench: deps
	@$(MAKE) --no-print-directory build VARIANT=release
	@$(MAKE) --no-print-directory s390
	@tools/bench.py

bench-density: deps
	@$(MAKE) --no-print-directory build VARIANT=release
	@tools/density.py

clean:
	rm -rf $(B)/obj-* $(B)/initramfs-* $(B)/disks $(B)/logs $(B)/host $(B)/hdr $(B)/selftests-mm $(B)/each \
		$(B)/qemu-obj $(B)/busybox-s390x
