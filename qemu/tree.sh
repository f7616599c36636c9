#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# build/qemu and qemu/patches: see scripts/tree.sh.
exec "$(dirname "$0")/../scripts/tree.sh" qemu "$@"
