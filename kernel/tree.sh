#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# build/linux and kernel/patches: see scripts/tree.sh.
exec "$(dirname "$0")/../scripts/tree.sh" linux "$@"
