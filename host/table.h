/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host's side of the page-state table (<linux/pagehint.h>): create,
 * attach and check the table and guest RAM files, and give back runs of
 * unused frames.
 */
#ifndef PAGEHINT_TABLE_H
#define PAGEHINT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/pagehint.h>

struct table {
	int table_fd;
	int ram_fd;
	struct pagehint_header *hdr;
	uint8_t *states;		/* hdr + header_size */
	uint64_t *summary;		/* hdr + summary_offset: which chunks changed */
	size_t table_size;		/* bytes mapped: the table's, not its file's */
	uint64_t ram_size;		/* bytes of the RAM file */
	uint64_t nr_frames;
	uint64_t nr_chunks;		/* of PAGEHINT_CHUNK_FRAMES frames, the last one partial */
	uint64_t summary_offset;
	unsigned int nr_ranges;
	struct {
		uint64_t first_pfn, nr_frames, file_offset;
	} ranges[PAGEHINT_MAX_RANGES];
	/* this daemon's own totals since it opened the table */
	struct {
		uint64_t dropped_unused, dropped_volatile, punch_calls, cas_lost;
	} host;
	/*
	 * When set, called with frames claimed from state @want and not yet
	 * punched: a test stops the daemon there, holding the claims
	 * (--stop-after-claiming).
	 */
	void (*claimed)(struct table *t, uint8_t want, uint64_t pfn, uint64_t len);
};

/* Per-state frame counts from one pass over the table. */
struct table_counts {
	uint64_t stable, unused, volatile_, busy;
	uint64_t unused_dropped, volatile_dropped;
};

/*
 * What tells a file from its copy: device and inode, and the birth time
 * where the file system keeps one (a reused inode number gets a new one).
 */
struct file_identity {
	uint64_t dev, ino;
	uint64_t btime_ns;	/* 0: the file system keeps none */
};

int file_identity(int fd, struct file_identity *id);
bool file_identity_equal(const struct file_identity *a, const struct file_identity *b);

/* Bytes of table needed for a guest of ram_size bytes on a q35 machine. */
size_t table_size_for(uint64_t ram_size);
int q35_layout(struct table *t, uint64_t ram_size);

/*
 * Make a new table and RAM file for a guest of ram_size bytes.  Existing
 * files are refused unless force says that no guest runs on them.
 */
int table_create(const char *table_path, const char *ram_path, uint64_t ram_size, bool force,
		 char *err, size_t errlen);
/*
 * Make @path the new table of a guest of @ram_size bytes whose device is
 * @file_size bytes (a libvirt <shmem>: QEMU maps the file, and refuses one
 * of another size), before the guest boots: a new file, every state
 * STABLE, a new epoch, given to @uid:@gid, whom QEMU runs as ((uid_t)-1,
 * (gid_t)-1: root's), renamed over whatever was at @path (never opened:
 * another user's file, a link).  Refused while a process other than
 * pagehintd maps the file at @path: another running domain's table.
 */
int table_prepare(const char *path, uint64_t ram_size, uint64_t file_size, uid_t uid, gid_t gid,
		  char *err, size_t errlen);
int table_open(struct table *t, const char *table_path, const char *ram_path,
	       char *err, size_t errlen);
/*
 * table_open() for files QEMU made under libvirt, which carry no pairing
 * record: the caller must have established, through libvirt and not
 * through anything the guest can write, that both belong to one domain
 * (host mode: the domain's QEMU maps both, host_qemu_maps()).
 */
int table_open_for_qemu(struct table *t, const char *table_path, const char *ram_path,
			char *err, size_t errlen);
int table_open_readonly(struct table *t, const char *table_path, const char *ram_path,
			char *err, size_t errlen);
void table_close(struct table *t);
/*
 * Check a private copy of the header against the sizes of the table file
 * and the RAM file.  The table (the header's table_size) may be smaller
 * than its file, never larger.
 */
int table_check_header(const struct pagehint_header *hdr, size_t file_size,
		       uint64_t ram_size, char *err, size_t errlen);
/*
 * Check a private copy of the header against t->table_size (the table
 * file's size) and t->ram_size and fill in t's layout, derived from the
 * RAM file's size alone; t->table_size becomes the table's own size, all
 * that the host maps of the file.
 */
int table_check(const struct pagehint_header *hdr, struct table *t, char *err, size_t errlen);

uint64_t table_new_epoch(void);
void table_reset(struct table *t);
bool table_attached(const struct table *t);
void table_recover_busy(struct table *t);
void table_count(const struct table *t, struct table_counts *c);

/* Whether @pfn is a frame of the guest's RAM (in the table and in a range). */
bool table_has_frame(const struct table *t, uint64_t pfn);

/*
 * Find the next run of frames in state @want (without the DISCARDED bit)
 * at or after *pfn, at most max_frames long and contiguous in the RAM
 * file.  Returns the run's length (0: none left) and moves *pfn to its
 * first frame.
 */
uint64_t table_next_run(const struct table *t, uint8_t want, uint64_t *pfn,
			uint64_t max_frames);
/* One read of frame @pfn's state byte (a frame of the table). */
uint8_t table_state(const struct table *t, uint64_t pfn);

/*
 * Take the change summary: clear every word of it that has bits set, with
 * an atomic exchange, and OR what it held into @chunks (a bitmap of
 * t->nr_chunks bits, private to the caller).  Read the states of those
 * chunks only after this returns: that order is what makes the summary
 * race-free (docs/protocol.md, "The change summary").  Returns the number
 * of chunks taken.
 */
uint64_t table_take_changed(struct table *t, uint64_t *chunks);

/*
 * Give back the memory of the run found by table_next_run: claim each
 * frame with a compare-and-swap (the guest may win some), punch the
 * claimed frames out of the RAM file and mark them dropped.  Frames
 * claimed after the guest detached go back untouched.  Returns the
 * number of frames given back, or -1 with errno from fallocate.
 */
int64_t table_drop_run(struct table *t, uint8_t want, uint64_t pfn, uint64_t len);

/*
 * Tell the guest how many frames the host would take beyond the unused
 * ones (0: none, so it need make no frame volatile).  A hint, never read
 * back.
 */
void table_set_host_wants(struct table *t, uint64_t frames);

/* Host memory behind the RAM file, in bytes (its allocated blocks). */
uint64_t ram_resident(const struct table *t);

/*
 * Of @blocks, what ram_resident() said a moment ago, the bytes in the
 * host's RAM (never more than @blocks): the rest the host swapped out.
 * Walks the file's pages, about 4 ms a GiB.  Returns 0, or -errno when
 * the kernel cannot tell (-ENOSYS before Linux 6.5, -EPERM under a
 * seccomp filter without cachestat).
 */
int ram_in_memory(const struct table *t, uint64_t blocks, uint64_t *in_ram);

#endif
