// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the host's table code against real files: layout, header
 * validation, the run finder and the discard loop, including a guest
 * thread that races the host the way a real guest does.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <endian.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../table.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

struct files {
	char dir[64], table[96], ram[96];
	char err[256];
};

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

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, f->err, sizeof(f->err)), 0);
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

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, f->err, sizeof(f->err)), 0);
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

static void table_size_mismatch(struct files *f)
{
	assert_int_equal(truncate(f->table, table_size_for(64 * MiB) * 2), 0);
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

static void test_refuses_second_daemon(void **state)
{
	struct files *f = *state;
	struct table t, t2;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t2, f->table, f->ram, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, "in use"));
	/* and init must not wipe a table a daemon is using */
	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, f->err, sizeof(f->err)), -1);
	table_close(&t);
}

static void test_create_refuses_other_guests_ram(void **state)
{
	struct files *f = *state;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_create(f->table, f->ram, 128 * MiB, f->err, sizeof(f->err)), -1);
	assert_non_null(strstr(f->err, "another guest's"));
}

static void test_next_run_merges_and_caps(void **state)
{
	struct files *f = *state;
	struct table t;
	uint64_t pfn = 0, len;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, f->err, sizeof(f->err)), 0);
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

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
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

static void test_recover_busy(void **state)
{
	struct files *f = *state;
	struct table_counts c;
	struct table t;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, f->err, sizeof(f->err)), 0);
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
 * The guest's side of the protocol, as the kernel does it: take a frame
 * (unused -> stable, waiting while the host holds it busy), use it, give
 * it back.  Contents written while stable must read back intact, however
 * hard the host punches at the same time.
 */
#define RACE_FRAMES	16
#define RACE_ROUNDS	3000

struct race {
	struct table *t;
	uint8_t *ram;
	unsigned long corrupt, waits;
	volatile int stop, failed;
};

static void *guest_thread(void *arg)
{
	struct race *r = arg;
	unsigned int seed = 1;
	int round;

	for (round = 0; round < RACE_ROUNDS && !r->failed; round++) {
		uint64_t pfn = rand_r(&seed) % RACE_FRAMES;
		uint8_t *s = &r->t->states[pfn], old;
		uint64_t *word = (uint64_t *)(r->ram + pfn * 4096);
		int i;

		for (;;) {
			old = __atomic_load_n(s, __ATOMIC_ACQUIRE);
			if (old & PAGEHINT_BUSY) {
				r->waits++;
				continue;
			}
			if (old == PAGEHINT_STABLE)
				break;	/* cannot happen: only we make frames stable */
			if (__atomic_compare_exchange_n(s, &old, PAGEHINT_STABLE, false,
							__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
				break;
		}
		for (i = 0; i < 512; i++)
			word[i] = 0x1234567800000000ULL | round;
		sched_yield();
		for (i = 0; i < 512; i++)
			r->corrupt += word[i] != (0x1234567800000000ULL | (uint64_t)round);
		/* only the guest changes a stable frame */
		old = PAGEHINT_STABLE;
		if (!__atomic_compare_exchange_n(s, &old, PAGEHINT_UNUSED, false,
						 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			r->failed = 1;
	}
	r->stop = 1;
	return NULL;
}

static void test_race_with_guest(void **state)
{
	struct files *f = *state;
	struct race r = { 0 };
	struct table t;
	pthread_t guest;
	uint64_t dropped = 0;

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open(&t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	r.t = &t;
	r.ram = mmap(NULL, RACE_FRAMES * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, t.ram_fd, 0);
	assert_true(r.ram != MAP_FAILED);
	memset(t.states, PAGEHINT_UNUSED, RACE_FRAMES);
	assert_int_equal(pthread_create(&guest, NULL, guest_thread, &r), 0);
	while (!r.stop) {
		uint64_t pfn = 0, len;

		while ((len = table_next_run(&t, PAGEHINT_UNUSED, &pfn, 4))) {
			int64_t n = table_drop_run(&t, PAGEHINT_UNUSED, pfn, len);

			assert_true(n >= 0);
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
	}
	pthread_join(guest, NULL);
	print_message("race: %llu frames dropped, %lu guest waits, %lu corrupt\n",
		      (unsigned long long)dropped, r.waits, r.corrupt);
	assert_int_equal(r.corrupt, 0);
	assert_false(r.failed);
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
		cmocka_unit_test_setup_teardown(test_refuses_second_daemon, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_create_refuses_other_guests_ram, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_next_run_merges_and_caps, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_drop_run_gives_back_only_unused, setup_files,
						teardown_files),
		cmocka_unit_test_setup_teardown(test_recover_busy, setup_files, teardown_files),
		cmocka_unit_test_setup_teardown(test_race_with_guest, setup_files, teardown_files),
	};

	return cmocka_run_group_tests_name("table", tests, NULL, NULL);
}
