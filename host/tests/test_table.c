// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the host's table code against real files: layout, header
 * validation, the run finder and the discard loop, including a guest
 * thread that must wait for a frame the host holds busy, and one that races
 * the host the way a real guest does.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "../table.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

/*
 * table.c punches frames out of the RAM file with fallocate(), between
 * claiming them BUSY and releasing them.  This definition takes the place
 * of the C library's in the whole test program, so that a test can act
 * inside that window, the only time a guest can meet a BUSY frame, with
 * table.c itself unchanged.  during_punch gets the first frame and the
 * number of frames (the tests' RAM is below 2 GiB: file offset = frame).
 */
static void (*during_punch)(void *arg, uint64_t pfn, uint64_t len);
static void *during_punch_arg;

static int punch_errno;		/* a file system that cannot punch: EOPNOTSUPP */
static long statfs_magic;	/* the file system fstatfs() reports, if set */

int fstatfs(int fd, struct statfs *buf)
{
	int ret = syscall(SYS_fstatfs, fd, buf);

	if (!ret && statfs_magic)
		buf->f_type = statfs_magic;
	return ret;
}

int fallocate(int fd, int mode, off_t offset, off_t len)
{
	if (punch_errno && mode & FALLOC_FL_PUNCH_HOLE) {
		errno = punch_errno;
		return -1;
	}
	if (during_punch && mode & FALLOC_FL_PUNCH_HOLE)
		during_punch(during_punch_arg, offset / 4096, len / 4096);
	/* the system call itself: libc's fallocate64 may be this very function */
	return syscall(SYS_fallocate, fd, mode, offset, len);
}

struct files {
	char dir[64], table[96], ram[96];
	char err[256];
};

/* Attach as the guest does: the host drops frames only after this. */
static void attach_guest(struct table *t)
{
	__atomic_store_n(&t->hdr->guest_epoch, t->hdr->host_epoch, __ATOMIC_SEQ_CST);
}

static int setup_files(void **state)
{
	struct files *f = calloc(1, sizeof(*f));

	strcpy(f->dir, "/tmp/pagehint-test-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->table, sizeof(f->table), "%s/table", f->dir);
	snprintf(f->ram, sizeof(f->ram), "%s/ram", f->dir);
	*state = f;
	return 0;
}

static int teardown_files(void **state)
{
	struct files *f = *state;

	during_punch = NULL;	/* a failed test must not leave it to the next */
	punch_errno = 0;
	statfs_magic = 0;
	unlink(f->table);
	unlink(f->ram);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void test_q35_layout_small(void **state)
{
	struct table t;

	(void)state;
	assert_int_equal(q35_layout(&t, GiB), 0);
	assert_int_equal(t.nr_ranges, 1);
	assert_int_equal(t.ranges[0].nr_frames, GiB / 4096);
	assert_int_equal(t.nr_frames, GiB / 4096);
	/* 256 Ki frames + a header page, rounded up to a power of two */
	assert_int_equal(table_size_for(GiB), 512 * 1024);
}

static void test_q35_layout_above_4g(void **state)
{
	struct table t;

	(void)state;
	assert_int_equal(q35_layout(&t, 4 * GiB), 0);
	assert_int_equal(t.nr_ranges, 2);
	assert_int_equal(t.ranges[0].nr_frames, 2 * GiB / 4096);
	assert_int_equal(t.ranges[1].first_pfn, 4 * GiB / 4096);
	assert_int_equal(t.ranges[1].file_offset, 2 * GiB);
	assert_int_equal(t.nr_frames, 6 * GiB / 4096);
	/* the PCI hole between the ranges, and past the end, are no frames */
	assert_true(table_has_frame(&t, 2 * GiB / 4096 - 1));
	assert_false(table_has_frame(&t, 2 * GiB / 4096));
	assert_false(table_has_frame(&t, 4 * GiB / 4096 - 1));
	assert_true(table_has_frame(&t, 4 * GiB / 4096));
	assert_true(table_has_frame(&t, 6 * GiB / 4096 - 1));
	assert_false(table_has_frame(&t, 6 * GiB / 4096));
}

static void test_bad_ram_size(void **state)
{
	(void)state;
	assert_int_equal(table_size_for(0), 0);
	assert_int_equal(table_size_for(GiB + 1), 0);
}

static void test_create_and_open(void **state)
{
	struct files *f = *state;
	struct table t;
	struct stat st;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(stat(f->ram, &st), 0);
	assert_int_equal(st.st_size, 64 * MiB);
	assert_int_equal(st.st_blocks, 0);	/* sparse: the host holds nothing yet */
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	assert_int_equal(t.nr_frames, 64 * MiB / 4096);
	assert_false(table_attached(&t));	/* no guest yet */
	t.hdr->guest_epoch = t.hdr->host_epoch;
	assert_true(table_attached(&t));
	table_reset(&t);
	assert_false(table_attached(&t));
	table_close(&t);
}

/* Open a valid table, let @corrupt damage it, and expect @message. */
static void expect_refusal(struct files *f, void (*corrupt)(struct files *f),
			   const char *message)
{
	struct table t;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	corrupt(f);
	f->err[0] = 0;
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), -1);
	if (!strstr(f->err, message))
		fail_msg("expected \"%s\" in \"%s\"", message, f->err);
}

static void poke_header(struct files *f, size_t offset, const void *val, size_t len)
{
	int fd = open(f->table, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, val, len, offset), len);
	close(fd);
}

static void bad_magic(struct files *f)
{
	uint64_t v = htole64(0x1234);

	poke_header(f, offsetof(struct pagehint_header, magic), &v, sizeof(v));
}

static void bad_version(struct files *f)
{
	uint32_t v = htole32(PAGEHINT_VERSION + 1);

	poke_header(f, offsetof(struct pagehint_header, version), &v, sizeof(v));
}

static void truncated_table(struct files *f)
{
	assert_int_equal(truncate(f->table, 100), 0);
}

/* a file shorter than the table its header describes */
static void table_size_mismatch(struct files *f)
{
	assert_int_equal(truncate(f->table, table_size_for(64 * MiB) / 2), 0);
}

static void ram_too_small(struct files *f)
{
	assert_int_equal(truncate(f->ram, 32 * MiB), 0);
}

static void too_many_frames(struct files *f)
{
	uint64_t v = htole64(table_size_for(64 * MiB));

	poke_header(f, offsetof(struct pagehint_header, nr_frames), &v, sizeof(v));
}

static void missing_ram(struct files *f)
{
	unlink(f->ram);
}

static void test_refuses_bad_magic(void **state)
{
	expect_refusal(*state, bad_magic, "bad magic");
}

static void test_refuses_bad_version(void **state)
{
	expect_refusal(*state, bad_version, "version");
}

static void test_refuses_truncated_table(void **state)
{
	expect_refusal(*state, truncated_table, "too short");
}

static void test_refuses_size_mismatch(void **state)
{
	expect_refusal(*state, table_size_mismatch, "but the file has");
}

/*
 * libvirt makes a <shmem> file a power of two of at least 1 MiB, larger
 * than the 32 KiB table of a 64 MiB guest: the table is taken, and the
 * host maps and writes nothing beyond it.
 */
static void test_accepts_file_larger_than_table(void **state)
{
	struct files *f = *state;
	size_t size = table_size_for(64 * MiB), file = MiB, i;
	uint8_t *beyond = malloc(file - size);
	struct table t;
	int fd;

	assert_non_null(beyond);
	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	fd = open(f->table, O_RDWR);
	assert_true(fd >= 0);
	memset(beyond, 0xa5, file - size);
	assert_int_equal(pwrite(fd, beyond, file - size, size), file - size);
	if (table_open(&t, f->table, f->ram, f->err, sizeof(f->err)))
		fail_msg("a %zu-byte table in a %zu-byte file refused: %s", size, file, f->err);
	assert_int_equal(t.table_size, size);
	/* the host writes every byte it owns: states, summary, header */
	t.hdr->guest_epoch = t.hdr->host_epoch;
	table_reset(&t);
	table_recover_busy(&t);
	table_close(&t);
	memset(beyond, 0, file - size);
	assert_int_equal(pread(fd, beyond, file - size, size), file - size);
	for (i = 0; i < file - size; i++)
		if (beyond[i] != 0xa5)
			fail_msg("byte %zu beyond the table changed to %#x", size + i, beyond[i]);
	close(fd);
	free(beyond);
}

static void test_refuses_small_ram(void **state)
{
	expect_refusal(*state, ram_too_small, "outside the");
}

static void test_refuses_frames_beyond_table(void **state)
{
	expect_refusal(*state, too_many_frames, "has room for");
}

static void test_refuses_missing_ram(void **state)
{
	expect_refusal(*state, missing_ram, "cannot open guest RAM file");
}

static void poke_range(struct files *f, unsigned int i, uint64_t first, uint64_t n,
		       uint64_t off)
{
	struct pagehint_range r = {
		.first_pfn = htole64(first), .nr_frames = htole64(n), .file_offset = htole64(off),
	};

	poke_header(f, offsetof(struct pagehint_header, ranges[i]), &r, sizeof(r));
}

static void forty_ranges(struct files *f)
{
	uint32_t v = htole32(40);

	poke_header(f, offsetof(struct pagehint_header, nr_ranges), &v, sizeof(v));
}

/* off + (n << 12) wraps to 0: passed the old check, then EINVAL killed the daemon */
static void wrapping_range(struct files *f)
{
	poke_range(f, 0, 16383, 1, 0xfffffffffffff000ULL);
}

static void overlapping_ranges(struct files *f)
{
	uint32_t v = htole32(2);

	poke_header(f, offsetof(struct pagehint_header, nr_ranges), &v, sizeof(v));
	poke_range(f, 1, 0, 16384, 0);
}

/* a layout that fits table and file, but is not the RAM file's */
static void other_layout(struct files *f)
{
	poke_range(f, 0, 0, 8192, 32 * MiB);
}

/* a summary inside the table, but not where this host puts it */
static void moved_summary(struct files *f)
{
	uint64_t v = htole64(PAGEHINT_HEADER_SIZE + 16384 + 8);

	poke_header(f, offsetof(struct pagehint_header, summary_offset), &v, sizeof(v));
}

/* a summary over the states */
static void summary_over_states(struct files *f)
{
	uint64_t v = htole64(PAGEHINT_HEADER_SIZE + 8);

	poke_header(f, offsetof(struct pagehint_header, summary_offset), &v, sizeof(v));
}

static void ram_larger_than_table(struct files *f)
{
	assert_int_equal(truncate(f->ram, 128 * MiB), 0);
}

static void test_refuses_forty_ranges(void **state)
{
	expect_refusal(*state, forty_ranges, "has 40 RAM ranges");
}

static void test_refuses_wrapping_range(void **state)
{
	expect_refusal(*state, wrapping_range, "lies outside the 67108864-byte RAM file");
}

static void test_refuses_overlapping_ranges(void **state)
{
	expect_refusal(*state, overlapping_ranges, "RAM ranges 0 and 1 overlap");
}

static void test_refuses_other_layout(void **state)
{
	expect_refusal(*state, other_layout, "does not describe the 67108864-byte RAM file");
}

static void test_refuses_moved_summary(void **state)
{
	expect_refusal(*state, moved_summary, "does not describe the 67108864-byte RAM file");
}

/* Writes @pages pages of @path (created) and gives its fd. */
static int written_file(const char *path, size_t pages)
{
	static char page[4096] = { 1 };
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	size_t i;

	assert_true(fd >= 0);
	for (i = 0; i < pages; i++)
		assert_int_equal(write(fd, page, sizeof(page)), sizeof(page));
	return fd;
}

/*
 * The budget counts what a guest holds in host RAM: on tmpfs with nothing
 * swapped that is every block; on a disk file system the blocks stay when
 * the pages leave the page cache, and ram_in_memory() must not count them.
 * (tmpfs's swapped pages are the same case; a unit test has no swap.)
 */
static void test_ram_in_memory(void **state)
{
	char shm[] = "/dev/shm/pagehint-test-inmem-XXXXXX";
	char disk[] = "/var/tmp/pagehint-test-inmem-XXXXXX";
	struct table t = { .table_fd = -1 };
	uint64_t blocks, in_ram;
	struct statfs sfs;
	int err;

	(void)state;
	t.ram_fd = mkstemp(shm);
	assert_true(t.ram_fd >= 0);
	close(t.ram_fd);
	t.ram_fd = written_file(shm, 64);
	blocks = ram_resident(&t);
	assert_true(blocks >= 64 * 4096);
	err = ram_in_memory(&t, blocks, &in_ram);
	if (err == -ENOSYS || err == -EPERM) {
		print_message("cachestat(): %s; the budget counts blocks\n", strerror(-err));
		close(t.ram_fd);
		unlink(shm);
		return;
	}
	assert_int_equal(err, 0);
	assert_int_equal(in_ram, blocks);
	/* never above what the caller read, whatever came since */
	assert_int_equal(ram_in_memory(&t, 4096, &in_ram), 0);
	assert_int_equal(in_ram, 4096);
	close(t.ram_fd);
	unlink(shm);

	if (statfs("/var/tmp", &sfs) || sfs.f_type == TMPFS_MAGIC) {
		print_message("/var/tmp is not on a disk: only tmpfs is tried\n");
		return;
	}
	t.ram_fd = mkstemp(disk);
	assert_true(t.ram_fd >= 0);
	close(t.ram_fd);
	t.ram_fd = written_file(disk, 64);
	assert_int_equal(fsync(t.ram_fd), 0);
	assert_int_equal(posix_fadvise(t.ram_fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	blocks = ram_resident(&t);
	assert_true(blocks >= 64 * 4096);
	assert_int_equal(ram_in_memory(&t, blocks, &in_ram), 0);
	assert_true(in_ram < 8 * 4096);
	close(t.ram_fd);
	unlink(disk);
}

static void test_refuses_summary_over_states(void **state)
{
	expect_refusal(*state, summary_over_states,
		       "change summary (at 0x1008) is not between its states and its end");
}

static void test_refuses_larger_ram(void **state)
{
	expect_refusal(*state, ram_larger_than_table,
		       "does not describe the 134217728-byte RAM file");
}

/*
 * A guest rewrites its header while a daemon starts: it flips nr_ranges
 * between 1 and 40 and nr_frames between right and far too many, as fast
 * as it can.  Every open that succeeds must use the layout of the RAM
 * file, never a value the guest wrote after the check.
 */
struct flipper {
	struct pagehint_header *hdr;
	int stop;
	unsigned long flips;
};

static void *flip_header(void *arg)
{
	struct flipper *fl = arg;

	while (!__atomic_load_n(&fl->stop, __ATOMIC_RELAXED)) {
		uint32_t n = fl->flips & 1 ? 40 : 1;
		uint64_t frames = fl->flips & 2 ? 1ULL << 40 : 16384;

		__atomic_store_n(&fl->hdr->nr_ranges, htole32(n), __ATOMIC_RELAXED);
		__atomic_store_n(&fl->hdr->nr_frames, htole64(frames), __ATOMIC_RELAXED);
		fl->flips++;
	}
	return NULL;
}

static void test_open_while_guest_rewrites_header(void **state)
{
	struct files *f = *state;
	struct flipper fl = { 0 };
	unsigned int i, opened = 0;
	pthread_t thread;
	struct table t;
	int fd;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	fd = open(f->table, O_RDWR);
	assert_true(fd >= 0);
	fl.hdr = mmap(NULL, PAGEHINT_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(fl.hdr != MAP_FAILED);
	assert_int_equal(pthread_create(&thread, NULL, flip_header, &fl), 0);
	for (i = 0; i < 20000; i++) {
		if (table_open(&t, f->table, f->ram, f->err, sizeof(f->err)))
			continue;
		opened++;
		assert_int_equal(t.nr_ranges, 1);
		assert_int_equal(t.nr_frames, 16384);
		assert_int_equal(t.ranges[0].nr_frames, 16384);
		assert_int_equal(t.ranges[0].file_offset, 0);
		table_close(&t);
	}
	__atomic_store_n(&fl.stop, 1, __ATOMIC_RELAXED);
	pthread_join(thread, NULL);
	printf("rewrites: %u of %u opens succeeded, %lu rewrites of the header\n",
	       opened, i, fl.flips);
	/* refusals alone would prove nothing: the header put right opens */
	fl.hdr->nr_ranges = htole32(1);
	fl.hdr->nr_frames = htole64(16384);
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	table_close(&t);
	munmap(fl.hdr, PAGEHINT_HEADER_SIZE);
	close(fd);
}

/*
 * ramfs cannot punch holes: the daemon ran until the guest freed its
 * first frame, then exited.  It must refuse at start instead.
 */
static void test_refuses_ram_that_cannot_punch(void **state)
{
	struct files *f = *state;
	struct table t;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	punch_errno = EOPNOTSUPP;
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), -1);
	if (!strstr(f->err, "cannot give memory back 4 KiB at a time (Operation not supported)"))
		fail_msg("unexpected: %s", f->err);
	/* status reads anyway: it punches nothing */
	assert_int_equal(table_open_readonly(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	table_close(&t);
	/* hugetlbfs says yes to a 4 KiB punch and frees nothing */
	punch_errno = 0;
	statfs_magic = HUGETLBFS_MAGIC;
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), -1);
	if (!strstr(f->err, "is on hugetlbfs"))
		fail_msg("unexpected: %s", f->err);
}

static void test_refuses_second_daemon(void **state)
{
	struct files *f = *state;
	struct table t, t2;
	struct stat st;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t2, f->table, f->ram, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, "in use"));
	/* and init must not wipe a table a daemon is using, not even forced: nor touch it */
	assert_int_equal(chmod(f->ram, 0640), 0);
	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, true, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, "in use by a running pagehintd"));
	assert_int_equal(stat(f->ram, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	table_close(&t);
}

/* "status" reads beside a running daemon, and never blocks one's start. */
static void test_status_beside_daemon(void **state)
{
	struct files *f = *state;
	struct table daemon, status;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&daemon, f->table, f->ram, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open_readonly(&status, f->table, f->ram, f->err,
					     sizeof(f->err)), 0);
	assert_int_equal(status.nr_frames, 16384);
	table_close(&daemon);
	assert_int_equal(table_open(&daemon, f->table, f->ram, f->err, sizeof(f->err)), 0);
	table_close(&daemon);
	table_close(&status);
}

/*
 * The host's totals are its own: a guest that overwrites the copy in the
 * header changes neither what the daemon reports nor what it publishes
 * next.
 */
static void test_host_counters_are_private(void **state)
{
	struct files *f = *state;
	struct table t;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	attach_guest(&t);
	memset(t.states, PAGEHINT_UNUSED, 10);
	assert_int_equal(table_drop_run(&t, PAGEHINT_UNUSED, 0, 10), 10);
	t.hdr->host.dropped_unused = htole64(1ULL << 60);	/* the guest forges */
	t.hdr->host.punch_calls = htole64(1ULL << 60);
	memset(t.states + 100, PAGEHINT_UNUSED, 5);
	assert_int_equal(table_drop_run(&t, PAGEHINT_UNUSED, 100, 5), 5);
	assert_int_equal(t.host.dropped_unused, 15);
	assert_int_equal(t.host.punch_calls, 2);
	assert_int_equal(le64toh(t.hdr->host.dropped_unused), 15);
	assert_int_equal(le64toh(t.hdr->host.punch_calls), 2);
	table_close(&t);
}

static void test_create_refuses_other_guests_ram(void **state)
{
	struct files *f = *state;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_create(f->table, f->ram, 128 * MiB, true, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, "another guest's"));
}

/* init makes new files: it never truncates or follows what is there */
static void test_init_refuses_existing_files(void **state)
{
	struct files *f = *state;
	char victim[128];
	struct stat st;
	int fd;

	fd = open(f->table, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "data", 4), 4);
	close(fd);
	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, "exists: init makes new files"));
	assert_int_equal(stat(f->table, &st), 0);
	assert_int_equal(st.st_size, 4);		/* not truncated */
	assert_int_not_equal(stat(f->ram, &st), 0);	/* the RAM file it made is gone */
	unlink(f->table);

	/* a symbolic link at --table: the file it points to is left alone */
	snprintf(victim, sizeof(victim), "%s/victim", f->dir);
	fd = open(victim, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "data", 4), 4);
	close(fd);
	assert_int_equal(symlink(victim, f->table), 0);
	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, true, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, "is a symbolic link"));
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 4);
	unlink(victim);
}

/*
 * --force takes over files of the caller's own, made private; a file
 * another user made (0666, say) stays theirs: that user could still
 * write to it.
 */
static void test_init_force_takes_only_own_files(void **state)
{
	struct files *f = *state;
	struct stat st;
	int fd;

	fd = open(f->table, O_CREAT | O_WRONLY, 0666);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0666), 0);
	close(fd);
	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, true, f->err, sizeof(f->err)), 0);
	assert_int_equal(stat(f->table, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* a second name for a file (a hard link) may be anybody's file */
	{
		char other[128];

		snprintf(other, sizeof(other), "%s/other-name", f->dir);
		assert_int_equal(link(f->table, other), 0);
		assert_int_equal(chmod(f->table, 0644), 0);
		assert_int_equal(table_create(f->table, f->ram, 64 * MiB, true, f->err,
					      sizeof(f->err)), -1);
		assert_non_null(strstr(f->err, "with one name"));
		assert_int_equal(stat(f->table, &st), 0);
		assert_int_equal(st.st_mode & 0777, 0644);
		unlink(other);
	}
	if (geteuid() != 0) {
		printf("init: not root, so no file of another user to try\n");
		return;
	}
	assert_int_equal(chown(f->table, 65534, 65534), 0);
	assert_int_equal(chmod(f->table, 0666), 0);
	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, true, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, "is not a regular file of this user's with one name"));
	assert_int_equal(stat(f->table, &st), 0);
	assert_int_equal(st.st_uid, 65534);
}

/*
 * One daemon per RAM file: a daemon started on guest B's table with guest
 * A's RAM file, beside A's own daemon, zeroed A's stable frames.
 */
static void test_refuses_second_daemon_on_ram(void **state)
{
	struct files *f = *state;
	char table_b[128], ram_b[128];
	struct table a, b;

	snprintf(table_b, sizeof(table_b), "%s/table-b", f->dir);
	snprintf(ram_b, sizeof(ram_b), "%s/ram-b", f->dir);
	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_create(table_b, ram_b, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&a, f->table, f->ram, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&b, table_b, f->ram, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, "is in use by another pagehintd"));
	table_close(&a);
	unlink(table_b);
	unlink(ram_b);
}

/*
 * A table and a RAM file of different guests, the same size: the layout
 * cannot tell them apart, the pairing id that init recorded can.
 */
static void test_refuses_other_guests_pair(void **state)
{
	struct files *f = *state;
	char table_b[128], ram_b[128];
	struct table t;

	snprintf(table_b, sizeof(table_b), "%s/table-b", f->dir);
	snprintf(ram_b, sizeof(ram_b), "%s/ram-b", f->dir);
	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_create(table_b, ram_b, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t, table_b, f->ram, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, "belong to different guests"));
	assert_int_equal(table_open_readonly(&t, table_b, f->ram, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, "belong to different guests"));
	/* a table nobody paired: not ours to trust either */
	assert_true(removexattr(table_b, "user.pagehint.pair") == 0 ||
		    removexattr(table_b, "trusted.pagehint.pair") == 0);
	assert_int_equal(table_open(&t, table_b, ram_b, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, "carries no pairing record"));
	/* each with its own opens */
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	table_close(&t);
	unlink(table_b);
	unlink(ram_b);
}

extern char **environ;

/* cp -a, as an operator would clone a guest's files */
static void cp_a(const char *from, const char *to)
{
	char *argv[] = { "cp", "-a", (char *)from, (char *)to, NULL };
	int status;
	pid_t pid;

	assert_int_equal(posix_spawnp(&pid, "cp", NULL, NULL, argv, environ), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void expect_open_refused(struct files *f, const char *table, const char *ram,
				const char *message)
{
	struct table t;

	f->err[0] = 0;
	if (!table_open(&t, table, ram, f->err, sizeof(f->err))) {
		table_close(&t);
		fail_msg("%s with %s opened: a copy of a pair taken for the pair", table, ram);
	}
	if (!strstr(f->err, message))
		fail_msg("expected \"%s\" in \"%s\"", message, f->err);
}

/*
 * cp -a copies the pairing attributes: a daemon on a copy of guest B's
 * table and guest A's RAM file zeroed A's memory wherever B freed.  The
 * pairing names the files by identity, which no copy has: every mix with
 * a copy is refused, and init --force makes the copies a pair of their own.
 */
static void test_refuses_copied_pair(void **state)
{
	struct files *f = *state;
	char table_c[128], ram_c[128];
	struct table t;

	snprintf(table_c, sizeof(table_c), "%s/table-copy", f->dir);
	snprintf(ram_c, sizeof(ram_c), "%s/ram-copy", f->dir);
	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	cp_a(f->table, table_c);
	cp_a(f->ram, ram_c);
	expect_open_refused(f, table_c, ram_c, "table-copy is a copy of a table");
	expect_open_refused(f, table_c, f->ram, "table-copy is a copy of a table");
	expect_open_refused(f, f->table, ram_c, "ram-copy is a copy of a RAM file");
	assert_non_null(strstr(f->err, "pagehintd init --force"));
	f->err[0] = 0;
	assert_int_equal(table_open_readonly(&t, table_c, ram_c, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, "is a copy"));
	/* the originals are still a pair */
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	table_close(&t);
	/* what the message says to do */
	assert_int_equal(table_create(table_c, ram_c, 64 * MiB, true, f->err, sizeof(f->err)), 0);
	if (table_open(&t, table_c, ram_c, f->err, sizeof(f->err)))
		fail_msg("init --force did not make the copies a pair: %s", f->err);
	table_close(&t);
	/* and a copy of the new pair's table is no partner of the old RAM file */
	expect_open_refused(f, table_c, f->ram, "belong to different guests");
	unlink(table_c);
	unlink(ram_c);
}

static void test_next_run_merges_and_caps(void **state)
{
	struct files *f = *state;
	struct table t;
	uint64_t pfn = 0, len;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	memset(t.states + 10, PAGEHINT_UNUSED, 5);
	memset(t.states + 20, PAGEHINT_UNUSED, 1000);
	t.states[16] = PAGEHINT_UNUSED | PAGEHINT_DISCARDED;	/* already given back */

	len = table_next_run(&t, PAGEHINT_UNUSED, &pfn, 512);
	assert_int_equal(pfn, 10);
	assert_int_equal(len, 5);
	pfn += len;
	len = table_next_run(&t, PAGEHINT_UNUSED, &pfn, 512);
	assert_int_equal(pfn, 20);
	assert_int_equal(len, 512);
	pfn += len;
	len = table_next_run(&t, PAGEHINT_UNUSED, &pfn, 512);
	assert_int_equal(pfn, 532);
	assert_int_equal(len, 488);
	pfn += len;
	assert_int_equal(table_next_run(&t, PAGEHINT_UNUSED, &pfn, 512), 0);
	table_close(&t);
}

static void fill_frame(int fd, uint64_t pfn, uint8_t byte)
{
	char buf[4096];

	memset(buf, byte, sizeof(buf));
	assert_int_equal(pwrite(fd, buf, sizeof(buf), pfn * 4096), sizeof(buf));
}

static uint8_t frame_byte(int fd, uint64_t pfn)
{
	uint8_t b = 0xee;

	assert_int_equal(pread(fd, &b, 1, pfn * 4096 + 123), 1);
	return b;
}

static void test_drop_run_gives_back_only_unused(void **state)
{
	struct files *f = *state;
	struct table t;
	struct table_counts c;
	uint64_t pfn;
	int64_t n;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	attach_guest(&t);
	for (pfn = 0; pfn < 64; pfn++)
		fill_frame(t.ram_fd, pfn, 0x5a);
	assert_int_equal(ram_resident(&t), 64 * 4096);
	memset(t.states + 8, PAGEHINT_UNUSED, 32);
	t.states[20] = PAGEHINT_STABLE;		/* the guest took one back */

	n = table_drop_run(&t, PAGEHINT_UNUSED, 8, 32);
	assert_int_equal(n, 31);
	assert_int_equal(ram_resident(&t), (64 - 31) * 4096);
	for (pfn = 0; pfn < 64; pfn++) {
		bool dropped = pfn >= 8 && pfn < 40 && pfn != 20;

		assert_int_equal(frame_byte(t.ram_fd, pfn), dropped ? 0 : 0x5a);
		assert_int_equal(t.states[pfn], dropped ? (PAGEHINT_UNUSED | PAGEHINT_DISCARDED) :
				 PAGEHINT_STABLE);
	}
	/* one call per stretch on either side of the frame the guest kept */
	assert_int_equal(le64toh(t.hdr->host.punch_calls), 2);
	assert_int_equal(le64toh(t.hdr->host.dropped_unused), 31);
	assert_int_equal(le64toh(t.hdr->host.cas_lost), 1);
	table_count(&t, &c);
	assert_int_equal(c.unused_dropped, 31);
	assert_int_equal(c.stable, 64 * MiB / 4096 - 31);
	table_close(&t);
}

/*
 * A guest that detached (kexec, shutdown, device removal) may be using
 * any frame already: frames claimed after the detach go back untouched
 * (drop_claimed() reads the epoch again after its claims).
 */
static void test_drop_run_stops_after_detach(void **state)
{
	struct files *f = *state;
	struct table t;
	uint64_t pfn;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	for (pfn = 0; pfn < 16; pfn++)
		fill_frame(t.ram_fd, pfn, 0x5a);
	memset(t.states, PAGEHINT_UNUSED, 8);
	memset(t.states + 8, PAGEHINT_VOLATILE, 8);
	attach_guest(&t);
	t.hdr->guest_epoch = 0;		/* detached, its frames still marked */

	assert_int_equal(table_drop_run(&t, PAGEHINT_UNUSED, 0, 8), 0);
	assert_int_equal(table_drop_run(&t, PAGEHINT_VOLATILE, 8, 8), 0);
	for (pfn = 0; pfn < 16; pfn++) {
		assert_int_equal(frame_byte(t.ram_fd, pfn), 0x5a);
		assert_int_equal(t.states[pfn], pfn < 8 ? PAGEHINT_UNUSED : PAGEHINT_VOLATILE);
	}
	assert_int_equal(le64toh(t.hdr->host.punch_calls), 0);
	assert_int_equal(le64toh(t.hdr->host.dropped_unused), 0);
	assert_int_equal(le64toh(t.hdr->host.dropped_volatile), 0);
	table_close(&t);
}

/* The claimed hook: every frame of the run is held, then the guest detaches. */
static void detach_while_claimed(struct table *t, uint8_t want, uint64_t pfn, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		assert_int_equal(t->states[pfn + i], PAGEHINT_BUSY | want);
	t->hdr->guest_epoch = 0;
}

/*
 * The window that the re-read of the epoch closes: the guest detaches
 * after the host claimed a run and before it punches it.
 */
static void test_drop_run_detach_between_claim_and_punch(void **state)
{
	struct files *f = *state;
	struct table t;
	uint64_t pfn;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	for (pfn = 0; pfn < 8; pfn++)
		fill_frame(t.ram_fd, pfn, 0x5a);
	memset(t.states, PAGEHINT_VOLATILE, 8);
	attach_guest(&t);
	t.claimed = detach_while_claimed;

	assert_int_equal(table_drop_run(&t, PAGEHINT_VOLATILE, 0, 8), 0);
	for (pfn = 0; pfn < 8; pfn++) {
		assert_int_equal(frame_byte(t.ram_fd, pfn), 0x5a);
		assert_int_equal(t.states[pfn], PAGEHINT_VOLATILE);
	}
	assert_int_equal(le64toh(t.hdr->host.punch_calls), 0);
	table_close(&t);
}

static void test_recover_busy(void **state)
{
	struct files *f = *state;
	struct table_counts c;
	struct table t;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	t.states[1] = PAGEHINT_BUSY | PAGEHINT_UNUSED;
	t.states[2] = PAGEHINT_BUSY | PAGEHINT_VOLATILE;
	t.states[3] = PAGEHINT_VOLATILE;
	/* never written by the protocol: stable, as the guest takes them */
	t.states[4] = PAGEHINT_BUSY;
	t.states[5] = 0xff;
	table_count(&t, &c);
	assert_int_equal(c.busy, 2);
	assert_int_equal(c.volatile_, 1);
	assert_int_equal(c.stable, 64 * MiB / 4096 - 3);
	table_recover_busy(&t);
	assert_int_equal(t.states[1], PAGEHINT_UNUSED | PAGEHINT_DISCARDED);
	/* unknown whether it was punched: the guest must re-read it */
	assert_int_equal(t.states[2], PAGEHINT_VOLATILE | PAGEHINT_DISCARDED);
	assert_int_equal(t.states[3], PAGEHINT_VOLATILE);
	assert_int_equal(t.states[4], PAGEHINT_BUSY);
	assert_int_equal(t.states[5], 0xff);
	table_close(&t);
}

/*
 * The guest's side of the protocol, as the kernel does it (pagehint_frame_to()
 * in drivers/virt/pagehint/table.c): only the host's two claims are busy.
 * Any other byte with the top bit set is stable, and waiting for it to
 * change could mean waiting forever.
 */
static bool guest_sees_busy(uint8_t s)
{
	return s == (PAGEHINT_BUSY | PAGEHINT_UNUSED) || s == (PAGEHINT_BUSY | PAGEHINT_VOLATILE);
}

/*
 * Make a frame stable, as the guest does when it allocates a page or takes
 * a volatile one back: wait while the host holds it busy, then move it to
 * STABLE with a compare-and-swap, a full barrier, before any use of its
 * contents.  Returns the byte the frame was taken from (STABLE: it was
 * stable already).  Every read that finds the frame busy adds one to
 * *spins at once, so that a host thread holding the frame can see the
 * guest wait.  The kernel spins with cpu_relax(); yielding instead lets
 * the host thread run when both share one CPU, and the host cannot tell.
 */
static uint8_t guest_take(uint8_t *s, unsigned long *spins)
{
	uint8_t old = __atomic_load_n(s, __ATOMIC_ACQUIRE);

	for (;;) {
		while (guest_sees_busy(old)) {
			__atomic_add_fetch(spins, 1, __ATOMIC_SEQ_CST);
			sched_yield();
			old = __atomic_load_n(s, __ATOMIC_ACQUIRE);
		}
		if (old == PAGEHINT_STABLE)
			return old;
		if (__atomic_compare_exchange_n(s, &old, PAGEHINT_STABLE, false,
						__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return old;
	}
}

/*
 * One frame dropped while the guest wants it, in a fixed order rather than
 * by chance: the host claims the frame (table_drop_run, unchanged), and in
 * its punch starts a guest thread that takes the frame, then holds on until
 * the guest has found the frame busy HOLD_SPINS times.  Nothing here is
 * timed: the guest thread counts every look at the busy frame, and a guest
 * that does not wait is done instead; either ends the hold.
 */
#define HOLD_SPINS	3
#define FILL_WORD	0x5a5a5a5a5a5a5a5aULL		/* fill_frame(0x5a) */
#define GUEST_WORD	0x6775657374000000ULL		/* "guest" */

struct hold {
	struct table *t;
	uint64_t *frame;		/* frame 0 of the RAM file, mapped */
	/* the host, in its punch */
	int punches;
	uint64_t punch_pfn, punch_len;
	bool started, done_held;
	uint8_t state_in, state_held;	/* frame 0's byte as the punch begins, ends */
	uint64_t word_held;		/* the frame's first word as the punch ends */
	/* the guest thread */
	pthread_t guest;
	unsigned long spins;
	int done;
	uint8_t from;			/* the byte it took the frame from */
	uint64_t seen;			/* every word of the frame it took, or'ed */
};

static void *hold_guest(void *arg)
{
	struct hold *h = arg;
	int i;

	h->from = guest_take(&h->t->states[0], &h->spins);
	for (i = 0; i < 512; i++)
		h->seen |= h->frame[i];
	for (i = 0; i < 512; i++)
		h->frame[i] = GUEST_WORD | i;
	__atomic_store_n(&h->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void hold_punch(void *arg, uint64_t pfn, uint64_t len)
{
	struct hold *h = arg;

	if (h->punches++)
		return;
	h->punch_pfn = pfn;
	h->punch_len = len;
	h->state_in = __atomic_load_n(&h->t->states[0], __ATOMIC_ACQUIRE);
	h->started = !pthread_create(&h->guest, NULL, hold_guest, h);
	/* the guest thread is a normal thread: it runs, even on one CPU */
	while (h->started && __atomic_load_n(&h->spins, __ATOMIC_SEQ_CST) < HOLD_SPINS &&
	       !__atomic_load_n(&h->done, __ATOMIC_ACQUIRE))
		sched_yield();
	h->state_held = __atomic_load_n(&h->t->states[0], __ATOMIC_ACQUIRE);
	h->word_held = __atomic_load_n(&h->frame[0], __ATOMIC_RELAXED);
	h->done_held = __atomic_load_n(&h->done, __ATOMIC_ACQUIRE);
}

static void expect_guest_waits_for_drop(struct files *f, uint8_t want)
{
	struct hold h = { 0 };
	struct table t;
	int64_t n;
	int i;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	attach_guest(&t);
	h.t = &t;
	h.frame = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, t.ram_fd, 0);
	assert_true(h.frame != MAP_FAILED);
	fill_frame(t.ram_fd, 0, 0x5a);
	t.states[0] = want;

	during_punch = hold_punch;
	during_punch_arg = &h;
	n = table_drop_run(&t, want, 0, 1);
	during_punch = NULL;
	/* join before any assert: the thread uses h, on this stack */
	if (h.started)
		pthread_join(h.guest, NULL);
	print_message("hold: guest found the frame busy %lu times, took it from %#x\n",
		      h.spins, h.from);

	assert_int_equal(n, 1);
	assert_int_equal(h.punches, 1);
	assert_int_equal(h.punch_pfn, 0);
	assert_int_equal(h.punch_len, 1);
	assert_true(h.started);
	/* the host punches only a frame it holds, and the guest waits for it */
	assert_int_equal(h.state_in, PAGEHINT_BUSY | want);
	assert_true(h.spins >= HOLD_SPINS);
	assert_int_equal(h.state_held, PAGEHINT_BUSY | want);
	assert_false(h.done_held);
	assert_int_equal(h.word_held, FILL_WORD);
	/* then it gets the frame as released after the punch: dropped, and zero */
	assert_int_equal(h.from, want | PAGEHINT_DISCARDED);
	assert_int_equal(h.seen, 0);
	/* what it wrote once the frame was its own stays */
	assert_int_equal(t.states[0], PAGEHINT_STABLE);
	for (i = 0; i < 512; i++)
		assert_int_equal(h.frame[i], GUEST_WORD | i);
	munmap(h.frame, 4096);
	table_close(&t);
}

static void test_guest_waits_for_unused_drop(void **state)
{
	expect_guest_waits_for_drop(*state, PAGEHINT_UNUSED);
}

static void test_guest_waits_for_volatile_drop(void **state)
{
	expect_guest_waits_for_drop(*state, PAGEHINT_VOLATILE);
}

/*
 * The claim is one atomic step, and this shows it in a fixed order rather
 * than by chance: the guest takes a frame back exactly between the host's
 * read of its byte and the host's write of BUSY.
 *
 * No seam in table.c is needed for that.  The page of the table that
 * holds the frame's byte is made read-only in the daemon's mapping, so the
 * daemon's first write to it faults, after every read it made, whatever
 * the code.  The SIGSEGV handler plays the guest: it makes the page
 * writable again, takes the frame (the compare-and-swap to STABLE the
 * kernel does) and fills it with its own data, and returns, so that the
 * faulting instruction runs again, now against the guest's byte.  A
 * compare-and-swap run again finds STABLE and leaves the frame alone; a
 * claim made of a load, a compare and a store writes BUSY over the
 * guest's STABLE, and the host then punches a frame the guest owns.
 *
 * The frame is the first of the second page of states, in the middle of
 * the run: the claims before it (first page) go through untouched, the
 * ones after it must too.
 */
#define CLAIM_PFN	4096		/* state byte 4096: the first of page 2 */
#define CLAIM_FIRST	(CLAIM_PFN - 8)
#define CLAIM_LEN	16

struct claim_race {
	uint8_t *page;			/* the read-only page of states */
	uint8_t *state;			/* the frame's byte, in that page */
	uint64_t *frame;		/* the frame's memory */
	uint8_t want;
	struct sigaction old;
	int faults, other_faults;
	bool took;			/* the guest's compare-and-swap won */
	uint8_t from;			/* the byte it found */
};

static struct claim_race *claim_race;

static void claim_race_segv(int sig, siginfo_t *si, void *uc)
{
	struct claim_race *c = claim_race;
	uint8_t *addr = si->si_addr;
	int i;

	(void)sig;
	(void)uc;
	if (addr < c->page || addr >= c->page + 4096) {
		/* a real crash: let the fault happen again under cmocka's handler */
		c->other_faults++;
		sigaction(SIGSEGV, &c->old, NULL);
		return;
	}
	c->faults++;
	mprotect(c->page, 4096, PROT_READ | PROT_WRITE);
	/* the guest, between the daemon's read and its write */
	c->from = c->want;
	c->took = __atomic_compare_exchange_n(c->state, &c->from, PAGEHINT_STABLE, false,
					      __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	if (c->took)
		for (i = 0; i < 512; i++)
			c->frame[i] = GUEST_WORD | i;
}

static void expect_claim_loses_to_guest(struct files *f, uint8_t want)
{
	struct claim_race c = { .want = want };
	struct sigaction sa = { 0 };
	struct table t;
	int64_t n = -1;
	int i, protected;
	uint64_t pfn;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	attach_guest(&t);
	for (pfn = CLAIM_FIRST; pfn < CLAIM_FIRST + CLAIM_LEN; pfn++)
		fill_frame(t.ram_fd, pfn, 0x5a);
	memset(t.states + CLAIM_FIRST, want, CLAIM_LEN);
	c.state = &t.states[CLAIM_PFN];
	c.page = c.state;
	assert_true(((uintptr_t)c.page & 4095) == 0);
	c.frame = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, t.ram_fd,
		       CLAIM_PFN * 4096);
	assert_true(c.frame != MAP_FAILED);

	claim_race = &c;
	sa.sa_sigaction = claim_race_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGSEGV, &sa, &c.old), 0);
	/* no assert until the handler is gone: it uses c, on this stack */
	protected = mprotect(c.page, 4096, PROT_READ);
	if (!protected)
		n = table_drop_run(&t, want, CLAIM_FIRST, CLAIM_LEN);
	mprotect(c.page, 4096, PROT_READ | PROT_WRITE);
	sigaction(SIGSEGV, &c.old, NULL);
	claim_race = NULL;
	assert_int_equal(protected, 0);
	print_message("claim: %d fault of the daemon's write; the guest %s frame %d (found %#x)\n",
		      c.faults, c.took ? "took" : "did not take", CLAIM_PFN, c.from);

	/* it happened: the guest acted once, on the byte the daemon had read */
	assert_int_equal(c.other_faults, 0);
	assert_int_equal(c.faults, 1);
	assert_true(c.took);
	assert_int_equal(c.from, want);
	if (t.states[CLAIM_PFN] != PAGEHINT_STABLE || c.frame[0] != GUEST_WORD)
		fail_msg("the claim overwrote the guest's: frame %d is %#x, not stable (%#x), and holds %#llx, not the guest's %#llx",
			 CLAIM_PFN, t.states[CLAIM_PFN], PAGEHINT_STABLE,
			 (unsigned long long)c.frame[0], (unsigned long long)GUEST_WORD);
	for (i = 0; i < 512; i++)
		assert_int_equal(c.frame[i], GUEST_WORD | i);
	/* every other frame of the run was claimed and given back, in two punches */
	assert_int_equal(n, CLAIM_LEN - 1);
	for (pfn = CLAIM_FIRST; pfn < CLAIM_FIRST + CLAIM_LEN; pfn++) {
		if (pfn == CLAIM_PFN)
			continue;
		assert_int_equal(t.states[pfn], want | PAGEHINT_DISCARDED);
		assert_int_equal(frame_byte(t.ram_fd, pfn), 0);
	}
	assert_int_equal(le64toh(t.hdr->host.cas_lost), 1);
	assert_int_equal(le64toh(t.hdr->host.punch_calls), 2);
	munmap(c.frame, 4096);
	table_close(&t);
}

static void test_claim_loses_to_guest_unused(void **state)
{
	expect_claim_loses_to_guest(*state, PAGEHINT_UNUSED);
}

static void test_claim_loses_to_guest_volatile(void **state)
{
	expect_claim_loses_to_guest(*state, PAGEHINT_VOLATILE);
}

/*
 * The same by chance, many times: a guest thread takes random frames, uses
 * them and gives them back while the host drops whatever is unused.
 * Contents written while stable must read back intact, a frame taken back
 * dropped must read zero, however hard the host punches at the same time.
 *
 * That the guest meets busy frames RACE_WAITS times is made certain, and
 * not by a budget of rounds: until the guest has waited that often, the
 * host holds each claim open in its punch until the guest has found one
 * of its frames busy, and says which frames it holds; the guest's next
 * round takes one of those instead of a random frame, so every hold is
 * one wait, and the guest runs until it has its RACE_WAITS waits (and at
 * least RACE_ROUNDS rounds).  Neither side counts on the other making
 * progress in a given time or number of rounds: a slow machine only takes
 * longer, a fast one cannot get through without the waits.  A guest that
 * takes a held frame without waiting fails at once.  Only a host that never
 * punches at all would leave the guest going round forever: RACE_GIVE_UP_S
 * is a safety net against that, far beyond what a passing run takes (a
 * second or two), and not a bound any passing run comes near.
 */
#define RACE_FRAMES	16
#define RACE_ROUNDS	3000
#define RACE_WAITS	100
#define RACE_GIVE_UP_S	300
#define RACE_NO_HOLD	UINT64_MAX

struct race {
	struct table *t;
	uint8_t *ram;
	/* shared while the race runs */
	unsigned long spins;	/* guest: reads that found a frame busy */
	unsigned long waits;	/* guest: frames taken after waiting */
	uint64_t held_pfn;	/* host: frames it holds busy, or RACE_NO_HOLD */
	uint64_t held_len;
	int stop;		/* guest: done; host: give up */
	/* read once the guest thread has been joined */
	unsigned long rounds, corrupt, not_zero, bad_take, bad_release;
	unsigned long targeted;		/* guest: rounds that took a held frame */
	unsigned long missed_hold;	/* guest: held frames taken without a wait */
	bool gave_up;			/* guest: RACE_GIVE_UP_S passed */
	unsigned long holds;		/* host: claims held open for the guest */
	unsigned long bad_punch;	/* host: frames punched that it did not hold */
};

static double race_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *guest_thread(void *arg)
{
	struct race *r = arg;
	double give_up = race_now() + RACE_GIVE_UP_S;
	unsigned int seed = 1;
	unsigned long round;

	for (round = 0;; round++) {
		uint64_t pfn = rand_r(&seed) % RACE_FRAMES;
		uint64_t held = __atomic_load_n(&r->held_pfn, __ATOMIC_SEQ_CST);
		unsigned long spins = __atomic_load_n(&r->spins, __ATOMIC_RELAXED);
		uint64_t *word, seen = 0;
		uint8_t *s, old;
		bool waited;
		int i;

		if ((round >= RACE_ROUNDS && r->waits >= RACE_WAITS) ||
		    __atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
			break;
		if (race_now() > give_up) {
			r->gave_up = true;
			break;
		}
		/*
		 * The host is in its punch, holding these frames busy until
		 * this thread finds one busy: it cannot have released them.
		 */
		if (held != RACE_NO_HOLD) {
			pfn = held + pfn % __atomic_load_n(&r->held_len, __ATOMIC_SEQ_CST);
			r->targeted++;
		}
		word = (uint64_t *)(r->ram + pfn * 4096);
		s = &r->t->states[pfn];
		old = guest_take(s, &r->spins);
		waited = __atomic_load_n(&r->spins, __ATOMIC_RELAXED) != spins;
		if (waited)
			__atomic_add_fetch(&r->waits, 1, __ATOMIC_SEQ_CST);
		if (held != RACE_NO_HOLD && !waited) {
			r->missed_hold++;
			break;
		}
		/* only the guest makes a frame stable, and it gave them all back */
		if (old != PAGEHINT_UNUSED && old != (PAGEHINT_UNUSED | PAGEHINT_DISCARDED)) {
			r->bad_take++;
			break;
		}
		if (old & PAGEHINT_DISCARDED) {
			for (i = 0; i < 512; i++)
				seen |= word[i];
			r->not_zero += seen != 0;
		}
		for (i = 0; i < 512; i++)
			word[i] = 0x1234567800000000ULL | round;
		sched_yield();
		for (i = 0; i < 512; i++)
			r->corrupt += word[i] != (0x1234567800000000ULL | round);
		/* only the guest changes a stable frame */
		old = PAGEHINT_STABLE;
		if (!__atomic_compare_exchange_n(s, &old, PAGEHINT_UNUSED, false,
						 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
			r->bad_release++;
			break;
		}
	}
	r->rounds = round;
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * In the host's punch: check that it punches only frames it holds, and
 * hold them for the guest while it still owes waits, saying which they
 * are.  The frames being punched are the only busy ones, so a new busy
 * read by the guest is a read of one of them.  The hold is withdrawn
 * before the frames are released (after this returns), so a guest that
 * sees it finds them busy.
 */
static void race_punch(void *arg, uint64_t pfn, uint64_t len)
{
	struct race *r = arg;
	unsigned long spins = __atomic_load_n(&r->spins, __ATOMIC_SEQ_CST);
	uint64_t i;

	for (i = 0; i < len; i++)
		r->bad_punch += __atomic_load_n(&r->t->states[pfn + i], __ATOMIC_ACQUIRE) !=
				(PAGEHINT_BUSY | PAGEHINT_UNUSED);
	if (__atomic_load_n(&r->waits, __ATOMIC_SEQ_CST) >= RACE_WAITS)
		return;
	r->holds++;
	__atomic_store_n(&r->held_len, len, __ATOMIC_SEQ_CST);
	__atomic_store_n(&r->held_pfn, pfn, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&r->spins, __ATOMIC_SEQ_CST) == spins &&
	       !__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
		sched_yield();
	__atomic_store_n(&r->held_pfn, RACE_NO_HOLD, __ATOMIC_SEQ_CST);
}

static void test_race_with_guest(void **state)
{
	struct files *f = *state;
	struct race r = { .held_pfn = RACE_NO_HOLD };
	struct table t;
	pthread_t guest;
	uint64_t dropped = 0;
	int host_errno = 0;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	attach_guest(&t);
	r.t = &t;
	r.ram = mmap(NULL, RACE_FRAMES * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, t.ram_fd, 0);
	assert_true(r.ram != MAP_FAILED);
	memset(t.states, PAGEHINT_UNUSED, RACE_FRAMES);
	during_punch = race_punch;
	during_punch_arg = &r;
	assert_int_equal(pthread_create(&guest, NULL, guest_thread, &r), 0);
	/* no assert until the join: the guest thread uses r, on this stack */
	while (!__atomic_load_n(&r.stop, __ATOMIC_ACQUIRE)) {
		uint64_t pfn = 0, len;

		while ((len = table_next_run(&t, PAGEHINT_UNUSED, &pfn, 4))) {
			int64_t n = table_drop_run(&t, PAGEHINT_UNUSED, pfn, len);

			if (n < 0) {
				host_errno = errno;
				__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
				break;
			}
			dropped += n;
			pfn += len;
		}
		/* dropped frames are unused too: punch them again, the
		 * guest must not care */
		for (pfn = 0; pfn < RACE_FRAMES; pfn++) {
			uint8_t old = PAGEHINT_UNUSED | PAGEHINT_DISCARDED;

			__atomic_compare_exchange_n(&t.states[pfn], &old, PAGEHINT_UNUSED, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		}
		/* pagehintd sleeps between passes: a guest on the same CPU gets on */
		sched_yield();
	}
	pthread_join(guest, NULL);
	during_punch = NULL;
	print_message("race: %lu rounds, %llu frames dropped, %lu waits (%lu held, %lu rounds on a held frame, %lu spins)\n",
		      r.rounds, (unsigned long long)dropped, r.waits, r.holds, r.targeted, r.spins);
	print_message("race: %lu corrupt, %lu not zero when taken back dropped, %lu frames punched unheld, %lu held frames taken without a wait\n",
		      r.corrupt, r.not_zero, r.bad_punch, r.missed_hold);
	assert_int_equal(host_errno, 0);
	assert_int_equal(r.bad_punch, 0);
	assert_int_equal(r.bad_take, 0);
	assert_int_equal(r.bad_release, 0);
	if (r.missed_hold)
		fail_msg("race: the guest took a frame the host held busy without waiting for it");
	assert_int_equal(r.corrupt, 0);
	assert_int_equal(r.not_zero, 0);
	/* both sides of the window it exists for happened */
	if (r.gave_up)
		fail_msg("race: no %d waits in %d s (%lu so far, %lu holds): does the host punch?",
			 RACE_WAITS, RACE_GIVE_UP_S, r.waits, r.holds);
	assert_true(r.waits >= RACE_WAITS);
	assert_true(dropped > 0);
	munmap(r.ram, RACE_FRAMES * 4096);
	table_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_q35_layout_small),
		cmocka_unit_test(test_q35_layout_above_4g),
		cmocka_unit_test(test_bad_ram_size),
		cmocka_unit_test_setup_teardown(test_create_and_open, setup_files, teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_bad_magic, setup_files, teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_bad_version, setup_files, teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_truncated_table, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_size_mismatch, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_small_ram, setup_files, teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_frames_beyond_table, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_missing_ram, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_forty_ranges, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_wrapping_range, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_overlapping_ranges, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_other_layout, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_larger_ram, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_open_while_guest_rewrites_header, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_ram_that_cannot_punch, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_second_daemon, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_status_beside_daemon, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_host_counters_are_private, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_create_refuses_other_guests_ram, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_init_refuses_existing_files, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_init_force_takes_only_own_files, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_second_daemon_on_ram, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_accepts_file_larger_than_table, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_copied_pair, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_other_guests_pair, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_next_run_merges_and_caps, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_drop_run_gives_back_only_unused, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_drop_run_stops_after_detach, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_drop_run_detach_between_claim_and_punch,
						setup_files, teardown_files),
		cmocka_unit_test_setup_teardown(test_recover_busy, setup_files, teardown_files),
		cmocka_unit_test_setup_teardown(test_guest_waits_for_unused_drop, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_guest_waits_for_volatile_drop, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_claim_loses_to_guest_unused, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_claim_loses_to_guest_volatile, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_race_with_guest, setup_files, teardown_files),
		cmocka_unit_test(test_ram_in_memory),
		cmocka_unit_test_setup_teardown(test_refuses_moved_summary, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_refuses_summary_over_states, setup_files,
						teardown_files),
	};

	return cmocka_run_group_tests_name("table", tests, NULL, NULL);
}
