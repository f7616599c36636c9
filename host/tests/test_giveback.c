// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of pagehintd's give-back policy against real files: unused
 * frames always go, volatile ones only down to the target, stable ones
 * never, and a detached guest or a spent budget stops the pass.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../giveback.h"

#define MiB	(1ULL << 20)
#define FRAMES	1024		/* of the first 4 MiB, all filled */

/* Frames 0-255 stable, 256-511 unused, 512-1023 volatile. */
#define STABLE_END	256
#define UNUSED_END	512

struct fixture {
	char dir[64], table[96], ram[96], err[256];
	struct table t;
};

static const volatile sig_atomic_t not_stopping;

static uint8_t content(uint64_t pfn)
{
	return (uint8_t)(pfn * 7 + 1);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char buf[4096];
	uint64_t pfn;

	strcpy(f->dir, "/tmp/pagehint-giveback-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->table, sizeof(f->table), "%s/table", f->dir);
	snprintf(f->ram, sizeof(f->ram), "%s/ram", f->dir);
	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(table_open(&f->t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	for (pfn = 0; pfn < FRAMES; pfn++) {
		memset(buf, content(pfn), sizeof(buf));
		assert_int_equal(pwrite(f->t.ram_fd, buf, sizeof(buf), pfn * 4096), sizeof(buf));
	}
	memset(f->t.states + STABLE_END, PAGEHINT_UNUSED, UNUSED_END - STABLE_END);
	memset(f->t.states + UNUSED_END, PAGEHINT_VOLATILE, FRAMES - UNUSED_END);
	f->t.hdr->guest_epoch = f->t.hdr->host_epoch;	/* the guest attached */
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	table_close(&f->t);
	unlink(f->table);
	unlink(f->ram);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* A pass with no limit on fallocate() calls. */
static int pass(struct fixture *f, uint64_t budget, long long target_bytes,
		const volatile sig_atomic_t *stop, struct giveback_pass *done)
{
	return giveback_pass(&f->t, NULL, budget, UINT64_MAX, target_bytes, stop, done);
}

static uint8_t frame_byte(struct fixture *f, uint64_t pfn)
{
	uint8_t b = 0xee;

	assert_int_equal(pread(f->t.ram_fd, &b, 1, pfn * 4096 + 99), 1);
	return b;
}

/* Stable frames keep state and content, whatever the pass did. */
static void assert_stable_intact(struct fixture *f)
{
	uint64_t pfn;

	for (pfn = 0; pfn < STABLE_END; pfn++) {
		assert_int_equal(f->t.states[pfn], PAGEHINT_STABLE);
		assert_int_equal(frame_byte(f, pfn), content(pfn));
	}
}

static uint64_t count(struct fixture *f, uint8_t state)
{
	uint64_t pfn, n = 0;

	for (pfn = 0; pfn < FRAMES; pfn++)
		n += f->t.states[pfn] == state;
	return n;
}

static void test_no_target_keeps_volatile(void **state)
{
	struct fixture *f = *state;
	struct giveback_pass done;

	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping,
				       &done), 0);
	assert_int_equal(done.unused, UNUSED_END - STABLE_END);
	assert_int_equal(done.volatile_, 0);
	assert_int_equal(count(f, PAGEHINT_UNUSED | PAGEHINT_DISCARDED), UNUSED_END - STABLE_END);
	assert_int_equal(count(f, PAGEHINT_VOLATILE), FRAMES - UNUSED_END);
	assert_int_equal(frame_byte(f, UNUSED_END), content(UNUSED_END));
	assert_int_equal(ram_resident(&f->t), (FRAMES - (UNUSED_END - STABLE_END)) * 4096ULL);
	assert_stable_intact(f);
}

static void test_target_takes_unused_then_volatile(void **state)
{
	struct fixture *f = *state;
	struct giveback_pass done;
	long long target = 2 * MiB;	/* 512 frames: 256 stable, 256 volatile stay */
	uint64_t pfn;

	assert_int_equal(pass(f, UINT64_MAX, target, &not_stopping, &done), 0);
	assert_int_equal(done.unused, UNUSED_END - STABLE_END);
	/* no further than the target: the guest keeps what it need not lose */
	assert_int_equal(done.volatile_, 256);
	assert_int_equal(ram_resident(&f->t), (uint64_t)target);
	for (pfn = UNUSED_END; pfn < FRAMES; pfn++) {
		bool dropped = f->t.states[pfn] == (PAGEHINT_VOLATILE | PAGEHINT_DISCARDED);

		assert_true(dropped || f->t.states[pfn] == PAGEHINT_VOLATILE);
		assert_int_equal(frame_byte(f, pfn), dropped ? 0 : content(pfn));
	}
	assert_stable_intact(f);
}

static void test_target_already_met_keeps_volatile(void **state)
{
	struct fixture *f = *state;
	struct giveback_pass done;

	assert_int_equal(pass(f, UINT64_MAX, 3 * MiB, &not_stopping, &done), 0);
	assert_int_equal(done.unused, UNUSED_END - STABLE_END);
	assert_int_equal(done.volatile_, 0);	/* 3 MiB held after the unused went */
	assert_int_equal(count(f, PAGEHINT_VOLATILE), FRAMES - UNUSED_END);
	assert_stable_intact(f);
}

static void test_zero_target_takes_every_volatile(void **state)
{
	struct fixture *f = *state;
	struct giveback_pass done;

	assert_int_equal(pass(f, UINT64_MAX, 0, &not_stopping, &done), 0);
	assert_int_equal(done.volatile_, FRAMES - UNUSED_END);
	assert_int_equal(count(f, PAGEHINT_VOLATILE | PAGEHINT_DISCARDED), FRAMES - UNUSED_END);
	assert_int_equal(ram_resident(&f->t), STABLE_END * 4096ULL);
	assert_stable_intact(f);
}

static void test_budget_counts_both_states(void **state)
{
	struct fixture *f = *state;
	struct giveback_pass done;

	assert_int_equal(pass(f, 300, 0, &not_stopping, &done), 0);
	assert_int_equal(done.unused, 256);
	assert_int_equal(done.volatile_, 44);
	assert_int_equal(count(f, PAGEHINT_VOLATILE), FRAMES - UNUSED_END - 44);
	assert_stable_intact(f);
}

static void test_detached_guest_gets_nothing_dropped(void **state)
{
	struct fixture *f = *state;
	struct giveback_pass done;

	f->t.hdr->guest_epoch = 0;	/* a new boot that has not attached */
	assert_int_equal(pass(f, UINT64_MAX, 0, &not_stopping, &done), 0);
	assert_int_equal(done.unused + done.volatile_, 0);
	assert_int_equal(ram_resident(&f->t), FRAMES * 4096ULL);
}

static void test_stop_flag_ends_the_pass(void **state)
{
	static const volatile sig_atomic_t stopping = 1;
	struct fixture *f = *state;
	struct giveback_pass done;

	assert_int_equal(pass(f, UINT64_MAX, 0, &stopping, &done), 0);
	assert_int_equal(done.unused + done.volatile_, 0);
}

/*
 * A checkerboard of unused frames costs one fallocate() call each: the
 * call budget is what bounds the CPU a guest can make the daemon spend.
 * A spent budget also spares the scan.
 */
static void test_call_budget_bounds_a_checkerboard(void **state)
{
	struct fixture *f = *state;
	struct giveback_pass done;
	uint64_t pfn;

	memset(f->t.states + STABLE_END, PAGEHINT_STABLE, UNUSED_END - STABLE_END);
	for (pfn = STABLE_END; pfn < UNUSED_END; pfn += 2)
		f->t.states[pfn] = PAGEHINT_UNUSED;		/* 128 isolated frames */
	assert_int_equal(giveback_pass(&f->t, NULL, UINT64_MAX, 50, GIVEBACK_NO_TARGET,
				       &not_stopping, &done), 0);
	assert_int_equal(done.punch_calls, 50);
	assert_int_equal(done.unused, 50);
	assert_int_equal(giveback_pass(&f->t, NULL, UINT64_MAX, 0, GIVEBACK_NO_TARGET,
				       &not_stopping, &done), 0);
	assert_int_equal(done.punch_calls, 0);
	assert_int_equal(done.unused, 0);
	assert_int_equal(giveback_pass(&f->t, NULL, UINT64_MAX, 1000, GIVEBACK_NO_TARGET,
				       &not_stopping, &done), 0);
	assert_int_equal(done.punch_calls, 78);
	assert_int_equal(done.unused, 78);
}

/* An aged pass with no limits: frames given back into *@done. */
static void aged_pass(struct fixture *f, struct giveback_ages *ages, long long target_bytes,
		      struct giveback_pass *done)
{
	assert_int_equal(giveback_pass(&f->t, ages, UINT64_MAX, UINT64_MAX, target_bytes,
				       &not_stopping, done), 0);
}

/* An unused frame goes once it has been seen unused min_unused passes in a row. */
static void test_aged_unused_waits_its_passes(void **state)
{
	struct fixture *f = *state;
	struct giveback_ages ages;
	struct giveback_pass done;
	int pass;

	assert_int_equal(giveback_ages_init(&ages, f->t.nr_frames, 3), 0);
	/* first seen, then 1 and 2 passes old */
	for (pass = 0; pass < 3; pass++) {
		aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
		assert_int_equal(done.unused, 0);
	}
	aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
	assert_int_equal(done.unused, UNUSED_END - STABLE_END);
	assert_int_equal(done.volatile_, 0);
	giveback_ages_free(&ages);
}

/*
 * A frame the guest takes back and frees again between passes starts
 * its wait again: it was not idle for the whole age.
 */
static void test_aged_frame_taken_back_waits_again(void **state)
{
	struct fixture *f = *state;
	struct giveback_ages ages;
	struct giveback_pass done;
	int pass;

	assert_int_equal(giveback_ages_init(&ages, f->t.nr_frames, 3), 0);
	for (pass = 0; pass < 3; pass++)
		aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
	memset(f->t.states + 300, PAGEHINT_STABLE, 10);
	aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
	assert_int_equal(done.unused, UNUSED_END - STABLE_END - 10);
	memset(f->t.states + 300, PAGEHINT_UNUSED, 10);
	for (pass = 0; pass < 3; pass++) {
		aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
		assert_int_equal(done.unused, 0);
	}
	aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
	assert_int_equal(done.unused, 10);
	giveback_ages_free(&ages);
}

/* Under a target, the volatile frames that have been volatile longest go first. */
static void test_aged_target_takes_oldest_volatile(void **state)
{
	struct fixture *f = *state;
	struct giveback_ages ages;
	struct giveback_pass done;
	uint64_t pfn, held;
	int pass;

	/* unused frames never old enough: only volatile ones go */
	assert_int_equal(giveback_ages_init(&ages, f->t.nr_frames, GIVEBACK_MAX_PASSES), 0);
	/* the upper half volatile for 5 passes, the lower half only from now on */
	memset(f->t.states + UNUSED_END, PAGEHINT_STABLE, (FRAMES - UNUSED_END) / 2);
	for (pass = 0; pass < 5; pass++)
		aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
	memset(f->t.states + UNUSED_END, PAGEHINT_VOLATILE, (FRAMES - UNUSED_END) / 2);
	held = ram_resident(&f->t);
	aged_pass(f, &ages, held - 128 * 4096, &done);
	assert_int_equal(done.unused, 0);
	assert_int_equal(done.volatile_, 128);
	for (pfn = UNUSED_END; pfn < FRAMES; pfn++)
		if (f->t.states[pfn] & PAGEHINT_DISCARDED)
			assert_true(pfn >= UNUSED_END + (FRAMES - UNUSED_END) / 2);
	giveback_ages_free(&ages);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_call_budget_bounds_a_checkerboard, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_no_target_keeps_volatile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_target_takes_unused_then_volatile, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_target_already_met_keeps_volatile, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_zero_target_takes_every_volatile, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_budget_counts_both_states, setup, teardown),
		cmocka_unit_test_setup_teardown(test_detached_guest_gets_nothing_dropped, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stop_flag_ends_the_pass, setup, teardown),
		cmocka_unit_test_setup_teardown(test_aged_unused_waits_its_passes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_aged_frame_taken_back_waits_again, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_aged_target_takes_oldest_volatile, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
