# SPDX-License-Identifier: GPL-2.0
#
# make run     boot a hinted guest and show what memory the host got back
# make check   every test: host unit tests, the patch series, the guest,
#              KUnit, and the runner's own self-test
#
# Both install what they need first (scripts/deps.sh).

VARIANT ?= debug
B := build

.PHONY: all deps tree export kernel initramfs disks build check run clean help

all: build

help:
	@sed -n '3,7p' Makefile | sed 's/^# \{0,1\}//'

deps:
	@scripts/deps.sh

tree: deps
	@kernel/tree.sh prepare

export:
	@kernel/tree.sh export

kernel: tree
	@kernel/build.sh $(VARIANT)

$(B)/disks/data.img $(B)/disks/data.sha256: guest/mkdisks.sh
	@guest/mkdisks.sh

disks: $(B)/disks/data.img

initramfs: kernel disks
	@guest/mkinitramfs.sh $(VARIANT)

build: initramfs

check: deps
	@$(MAKE) --no-print-directory build VARIANT=debug
	@tools/check.py all

run: deps
	@$(MAKE) --no-print-directory build VARIANT=release
	@tools/run.py

clean:
	rm -rf $(B)/obj-* $(B)/initramfs-* $(B)/disks $(B)/logs $(B)/host
