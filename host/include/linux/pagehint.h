/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The page-state table that a guest and its host share for guest page
 * hinting (see include/linux/page-states.h for what the states mean).
 *
 * The table is one shared memory region: a header page, then one byte per
 * guest page frame, frame n at byte header_size + n.  On x86 QEMU exposes
 * it to the guest as the BAR of an ivshmem-plain PCI device, and the guest
 * writes it.  On s390 the guest sets frame states with ESSA, and QEMU's
 * emulation of ESSA writes them here on its behalf.  The host daemon maps
 * the same file.  All fields are little-endian.
 *
 * Every change of a frame's byte is a compare-and-swap by its owner:
 *
 *   guest:  STABLE   -> UNUSED     page freed
 *           UNUSED   -> STABLE     page allocated (also from UNUSED|DISCARDED)
 *           STABLE   -> VOLATILE   clean page cache may be re-created
 *           VOLATILE -> STABLE     contents needed again; fails when the
 *                                  host set DISCARDED: re-read the data
 *   host:   UNUSED or VOLATILE -> BUSY -> (same state) | DISCARDED
 *                                  while BUSY the host drops the frame's
 *                                  memory; a guest that meets BUSY waits
 *
 * A frame whose byte holds anything else is stable: the host never drops
 * it.  A table full of zeroes is all stable, so a table nobody has written
 * yet, or one whose guest never attached, is safe.
 *
 * The host only acts while the guest is attached to the current epoch:
 * host_epoch is set by the host whenever it (re)initialises the table,
 * and the guest copies it to guest_epoch once it has written every frame's
 * state.  A guest that resets or reboots must not run before the host has
 * started a new epoch; docs/protocol.md says how the host makes sure.  A
 * guest detaches (before a kexec, a shutdown, the removal of the device)
 * by setting guest_epoch to 0 and then waiting for every BUSY frame; so
 * the host reads guest_epoch again after it has claimed frames, and
 * releases them untouched if the guest has detached.
 *
 * So that the host need not read every byte to find what changed, the
 * table also holds a change summary at summary_offset: a bitmap of __le64
 * words, one bit per chunk of PAGEHINT_CHUNK_FRAMES frames (2 MiB), bit n
 * of the summary (bit n % 64 of word n / 64) for frames n << CHUNK_SHIFT
 * onwards.  After a frame of a chunk has become UNUSED or VOLATILE the
 * guest sets the chunk's bit; the host atomically clears a word and only
 * then reads the states of the chunks whose bits it took.  Both steps are
 * ordered by full barriers (the guest's compare-and-swap, the host's
 * exchange), so either the host reads the new state, or the guest's bit
 * comes after the host's clear and stays set for the host's next look.
 * A chunk whose bit is clear has no frame that became UNUSED or VOLATILE
 * since the host last read it.
 */
#ifndef _UAPI_LINUX_PAGEHINT_H
#define _UAPI_LINUX_PAGEHINT_H

#include <linux/types.h>

#define PAGEHINT_MAGIC		0x544e494845474150ULL	/* "PAGEHINT" */
#define PAGEHINT_VERSION	2
#define PAGEHINT_HEADER_SIZE	4096
#define PAGEHINT_PAGE_SIZE	4096
#define PAGEHINT_MAX_RANGES	4

/* The change summary: one bit per chunk of frames */
#define PAGEHINT_CHUNK_SHIFT	9
#define PAGEHINT_CHUNK_FRAMES	(1 << PAGEHINT_CHUNK_SHIFT)
/* bytes of summary for nr_frames frames: whole __le64 words */
#define PAGEHINT_SUMMARY_BYTES(nr_frames) \
	((((nr_frames) + 64 * PAGEHINT_CHUNK_FRAMES - 1) / (64 * PAGEHINT_CHUNK_FRAMES)) * 8)

/* Frame states: the byte of each frame */
#define PAGEHINT_STABLE		0x00
#define PAGEHINT_UNUSED		0x01
#define PAGEHINT_VOLATILE	0x02
#define PAGEHINT_STATE_MASK	0x0f
#define PAGEHINT_DISCARDED	0x40	/* with UNUSED or VOLATILE: contents gone */
#define PAGEHINT_BUSY		0x80	/* with UNUSED or VOLATILE: being dropped */

/*
 * Where guest frames live in the guest's RAM file: frames first_pfn to
 * first_pfn + nr_frames - 1 are at file_offset onwards.  Written by the
 * host, which knows how its machine model lays out guest RAM.
 */
struct pagehint_range {
	__le64 first_pfn;
	__le64 nr_frames;
	__le64 file_offset;
};

/* Totals the guest publishes now and then, for the host to report. */
struct pagehint_guest_counters {
	__le64 to_unused;	/* transitions stable -> unused */
	__le64 to_stable;	/* transitions unused -> stable */
	__le64 busy_waits;	/* transitions that waited for the host */
	__le64 frames_unused;	/* frames unused now */
};

/* Totals the host keeps. */
struct pagehint_host_counters {
	__le64 dropped_unused;	/* frames given back while unused */
	__le64 dropped_volatile;	/* frames given back while volatile */
	__le64 punch_calls;	/* fallocate(PUNCH_HOLE) calls */
	__le64 cas_lost;	/* busy claims the guest won first */
};

struct pagehint_header {
	__le64 magic;
	__le32 version;
	__le32 header_size;	/* byte offset of frame 0's state */
	__le32 page_size;
	__le32 nr_ranges;
	__le64 nr_frames;	/* state bytes after the header */
	__le64 table_size;	/* size of the whole shared region */
	__le64 host_epoch;	/* non-zero; new for every (re)initialisation */
	__le64 guest_epoch;	/* host_epoch once the guest has attached */
	struct pagehint_range ranges[PAGEHINT_MAX_RANGES];
	struct pagehint_guest_counters guest;
	struct pagehint_host_counters host;
	__le64 summary_offset;	/* byte offset of the change summary, 8-aligned */
	__le64 host_wants;	/* frames the host would take; 0: make none volatile */
};

#endif /* _UAPI_LINUX_PAGEHINT_H */
