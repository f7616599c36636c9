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

#include <endian.h>
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
	struct giveback g;	/* the immediate policy's */
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
	assert_int_equal(giveback_init(&f->g, &f->t, false, 0), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	giveback_free(&f->g);
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
	return giveback_pass(&f->t, &f->g, budget, UINT64_MAX, target_bytes, stop, done);
}

/*
 * Frames @first to @first + @n - 1 go to @state as the guest moves them:
 * a frame that becomes unused or volatile sets its chunk's bit in the
 * summary, after the state.
 */
static void guest_mark(struct fixture *f, uint64_t first, uint64_t n, uint8_t state)
{
	uint64_t c;

	memset(f->t.states + first, state, n);
	if (state != PAGEHINT_UNUSED && state != PAGEHINT_VOLATILE)
		return;
	for (c = first / PAGEHINT_CHUNK_FRAMES; c <= (first + n - 1) / PAGEHINT_CHUNK_FRAMES; c++)
		__atomic_fetch_or(&f->t.summary[c / 64], htole64(1ULL << (c % 64)),
				  __ATOMIC_SEQ_CST);
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
	assert_int_equal(giveback_pass(&f->t, &f->g, UINT64_MAX, 50, GIVEBACK_NO_TARGET,
				       &not_stopping, &done), 0);
	assert_int_equal(done.punch_calls, 50);
	assert_int_equal(done.unused, 50);
	assert_int_equal(giveback_pass(&f->t, &f->g, UINT64_MAX, 0, GIVEBACK_NO_TARGET,
				       &not_stopping, &done), 0);
	assert_int_equal(done.punch_calls, 0);
	assert_int_equal(done.unused, 0);
	assert_int_equal(giveback_pass(&f->t, &f->g, UINT64_MAX, 1000, GIVEBACK_NO_TARGET,
				       &not_stopping, &done), 0);
	assert_int_equal(done.punch_calls, 78);
	assert_int_equal(done.unused, 78);
}

/*
 * A pass reads the chunks that the guest's summary names and those where
 * an earlier pass left unused frames, nothing else: an idle guest costs
 * the host no read of its states.
 */
static void test_pass_reads_only_what_changed(void **state)
{
	struct fixture *f = *state;
	struct giveback_pass done;
	uint64_t pfn = 20 * PAGEHINT_CHUNK_FRAMES + 7;

	/* the guest attached since the last pass: every chunk */
	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping, &done), 0);
	assert_int_equal(done.chunks_read, f->t.nr_chunks);
	assert_int_equal(done.unused, UNUSED_END - STABLE_END);
	/* chunk 0 once more, where it saw unused frames: none left */
	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping, &done), 0);
	assert_int_equal(done.chunks_read, 1);
	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping, &done), 0);
	assert_int_equal(done.chunks_read, 0);

	/* a frame freed in chunk 20: that chunk, and the frame goes */
	guest_mark(f, pfn, 1, PAGEHINT_UNUSED);
	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping, &done), 0);
	assert_int_equal(done.chunks_read, 1);
	assert_int_equal(done.unused, 1);
	assert_int_equal(f->t.states[pfn], PAGEHINT_UNUSED | PAGEHINT_DISCARDED);
	assert_int_equal(f->t.summary[0], 0);
	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping, &done), 0);
	assert_int_equal(done.chunks_read, 1);

	/* a state the summary does not name is not read, until it does */
	f->t.states[pfn + 1] = PAGEHINT_UNUSED;
	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping, &done), 0);
	assert_int_equal(done.chunks_read + done.unused, 0);
	guest_mark(f, pfn + 1, 1, PAGEHINT_UNUSED);
	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping, &done), 0);
	assert_int_equal(done.unused, 1);

	/* a guest that sets every bit, past its last chunk too: every chunk, once */
	memset(f->t.summary, 0xff, PAGEHINT_SUMMARY_BYTES(f->t.nr_frames));
	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping, &done), 0);
	assert_int_equal(done.chunks_read, f->t.nr_chunks);
}

/*
 * A read budget smaller than what the guest names: each pass reads its
 * budget's worth, the next goes on where it stopped, and every chunk is
 * read once before any twice.  32 chunks, 10 reads a pass: one frame
 * freed in each is back after 4 passes, with 32 reads, none repeated.
 */
static void test_read_budget_reads_in_turn(void **state)
{
	struct giveback_budget b = { UINT64_MAX, UINT64_MAX, 10 };
	struct fixture *f = *state;
	struct giveback_pass done;
	uint64_t c, reads = 0, back = 0;
	int i;

	/* attached: every chunk named, read in turn too */
	for (i = 0; i < 4; i++) {
		assert_int_equal(giveback_pass_within(&f->t, &f->g, &b, GIVEBACK_NO_TARGET,
						      &not_stopping, &done), 0);
		reads += done.chunks_read;
	}
	assert_int_equal(reads, f->t.nr_chunks + 1);	/* chunk 0 again: it had unused left */
	for (c = 0; c < f->t.nr_chunks; c++)
		guest_mark(f, c * PAGEHINT_CHUNK_FRAMES + 300, 1, PAGEHINT_UNUSED);
	reads = 0;
	for (i = 0; i < 4; i++) {
		assert_int_equal(giveback_pass_within(&f->t, &f->g, &b, GIVEBACK_NO_TARGET,
						      &not_stopping, &done), 0);
		assert_true(done.chunks_read <= 10);
		reads += done.chunks_read;
		back += done.unused;
	}
	if (back != f->t.nr_chunks || reads != 4 * 10)
		fail_msg("%llu of %llu frames back in 4 passes of 10 reads (%llu reads)",
			 (unsigned long long)back, (unsigned long long)f->t.nr_chunks,
			 (unsigned long long)reads);
	/* no reads, no pass: the budget holds for the reads too */
	b.reads = 0;
	guest_mark(f, 5, 1, PAGEHINT_UNUSED);
	assert_int_equal(giveback_pass_within(&f->t, &f->g, &b, GIVEBACK_NO_TARGET,
					      &not_stopping, &done), 0);
	assert_int_equal(done.chunks_read + done.unused, 0);
}

/* Volatile frames are read only while the host is above its target. */
static void test_volatile_read_only_above_target(void **state)
{
	struct fixture *f = *state;
	struct giveback_pass done;

	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping, &done), 0);
	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping, &done), 0);
	assert_int_equal(pass(f, UINT64_MAX, 64 * MiB, &not_stopping, &done), 0);
	assert_int_equal(done.chunks_read, 0);
	/* the volatile chunk, seen in the first pass, without a new summary bit */
	assert_int_equal(pass(f, UINT64_MAX, 0, &not_stopping, &done), 0);
	assert_int_equal(done.chunks_read, 1);
	assert_int_equal(done.volatile_, FRAMES - UNUSED_END);
}

/* A target above what the host holds limits volatile frames, not unused ones. */
static void test_unused_go_under_a_target(void **state)
{
	struct fixture *f = *state;
	struct giveback_pass done;

	assert_int_equal(pass(f, UINT64_MAX, 64 * MiB, &not_stopping, &done), 0);
	assert_int_equal(done.unused, UNUSED_END - STABLE_END);
	assert_int_equal(done.volatile_, 0);
	/* and they are not left to be read again and again */
	assert_int_equal(pass(f, UINT64_MAX, 64 * MiB, &not_stopping, &done), 0);
	assert_int_equal(done.chunks_read, 1);
	assert_int_equal(pass(f, UINT64_MAX, 64 * MiB, &not_stopping, &done), 0);
	assert_int_equal(done.chunks_read, 0);
}

/*
 * A guest that detached (kexec, an unbind) and attaches again in the same
 * epoch is read afresh, as one in a new epoch is.
 */
static void test_reattach_reads_every_chunk(void **state)
{
	struct fixture *f = *state;
	struct giveback_pass done;

	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping, &done), 0);
	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping, &done), 0);
	f->t.hdr->guest_epoch = 0;
	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping, &done), 0);
	assert_int_equal(done.chunks_read, 0);
	f->t.hdr->guest_epoch = f->t.hdr->host_epoch;
	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping, &done), 0);
	assert_int_equal(done.chunks_read, f->t.nr_chunks);
}

/* The guest hears how many frames the host would still take. */
static void test_pass_tells_the_guest_what_it_wants(void **state)
{
	struct fixture *f = *state;
	struct giveback_pass done;

	f->t.hdr->host_wants = htole64(12345);
	assert_int_equal(pass(f, UINT64_MAX, GIVEBACK_NO_TARGET, &not_stopping, &done), 0);
	assert_int_equal(le64toh(f->t.hdr->host_wants), 0);
	/* target 0: of the stable and volatile frames, 128 given back, the rest wanted */
	assert_int_equal(pass(f, 128, 0, &not_stopping, &done), 0);
	assert_int_equal(done.volatile_, 128);
	assert_int_equal(le64toh(f->t.hdr->host_wants), STABLE_END + (FRAMES - UNUSED_END) - 128);
	/* at the target: nothing */
	assert_int_equal(pass(f, UINT64_MAX, 64 * MiB, &not_stopping, &done), 0);
	assert_int_equal(le64toh(f->t.hdr->host_wants), 0);
}

/* An aged pass with no limits: frames given back into *@done. */
static void aged_pass(struct fixture *f, struct giveback *ages, long long target_bytes,
		      struct giveback_pass *done)
{
	assert_int_equal(giveback_pass(&f->t, ages, UINT64_MAX, UINT64_MAX, target_bytes,
				       &not_stopping, done), 0);
}

/* An unused frame goes once it has been seen unused min_unused passes in a row. */
static void test_aged_unused_waits_its_passes(void **state)
{
	struct fixture *f = *state;
	struct giveback ages;
	struct giveback_pass done;
	int pass;

	assert_int_equal(giveback_init(&ages, &f->t, true, 3), 0);
	/* first seen, then 1 and 2 passes old */
	for (pass = 0; pass < 3; pass++) {
		aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
		assert_int_equal(done.unused, 0);
	}
	aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
	assert_int_equal(done.unused, UNUSED_END - STABLE_END);
	assert_int_equal(done.volatile_, 0);
	giveback_free(&ages);
}

/*
 * A frame the guest takes back and frees again between passes starts
 * its wait again: it was not idle for the whole age.
 */
static void test_aged_frame_taken_back_waits_again(void **state)
{
	struct fixture *f = *state;
	struct giveback ages;
	struct giveback_pass done;
	int pass;

	assert_int_equal(giveback_init(&ages, &f->t, true, 3), 0);
	for (pass = 0; pass < 3; pass++)
		aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
	memset(f->t.states + 300, PAGEHINT_STABLE, 10);
	aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
	assert_int_equal(done.unused, UNUSED_END - STABLE_END - 10);
	guest_mark(f, 300, 10, PAGEHINT_UNUSED);
	for (pass = 0; pass < 3; pass++) {
		aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
		assert_int_equal(done.unused, 0);
	}
	aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
	assert_int_equal(done.unused, 10);
	giveback_free(&ages);
}

/* Under a target, the volatile frames that have been volatile longest go first. */
static void test_aged_target_takes_oldest_volatile(void **state)
{
	struct fixture *f = *state;
	struct giveback ages;
	struct giveback_pass done;
	uint64_t pfn, held;
	int pass;

	/* unused frames never old enough: only volatile ones go */
	assert_int_equal(giveback_init(&ages, &f->t, true, GIVEBACK_MAX_PASSES), 0);
	/* chunk 1 volatile for 5 passes, then 128 of chunk 0's unused frames too */
	for (pass = 0; pass < 5; pass++)
		aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
	guest_mark(f, STABLE_END, 128, PAGEHINT_VOLATILE);
	held = ram_resident(&f->t);
	aged_pass(f, &ages, held - 128 * 4096, &done);
	assert_int_equal(done.unused, 0);
	assert_int_equal(done.volatile_, 128);
	for (pfn = 0; pfn < FRAMES; pfn++)
		if (f->t.states[pfn] & PAGEHINT_DISCARDED)
			assert_true(pfn >= UNUSED_END);
	giveback_free(&ages);
}

/*
 * A volatile frame the guest took back and gave up again while its chunk
 * went unread is young again: the summary names the chunk, not what
 * happened in it.  Frames volatile all along (in another chunk) go first.
 */
static void test_aged_volatile_young_after_a_gap(void **state)
{
	struct fixture *f = *state;
	uint64_t pfn, held, old = STABLE_END, again = UNUSED_END;
	struct giveback ages;
	struct giveback_pass done;
	int pass, dropped_old = 0, dropped_again = 0;

	assert_int_equal(giveback_init(&ages, &f->t, true, GIVEBACK_MAX_PASSES), 0);
	/* chunk 0: 256 stable frames to make volatile later; chunk 1: 256 volatile */
	memset(f->t.states + old, PAGEHINT_STABLE, 256);
	memset(f->t.states + again + 256, PAGEHINT_STABLE, 256);
	aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
	/* chunk 1's frames in use (no bit), volatile again only at pass 99 */
	memset(f->t.states + again, PAGEHINT_STABLE, 256);
	for (pass = 2; pass < 50; pass++)
		aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
	guest_mark(f, old, 256, PAGEHINT_VOLATILE);
	for (; pass < 99; pass++)
		aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
	guest_mark(f, again, 256, PAGEHINT_VOLATILE);
	aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
	aged_pass(f, &ages, GIVEBACK_NO_TARGET, &done);
	held = ram_resident(&f->t);
	aged_pass(f, &ages, held - 128 * 4096, &done);
	assert_int_equal(done.volatile_, 128);
	for (pfn = old; pfn < again + 256; pfn++) {
		if (!(f->t.states[pfn] & PAGEHINT_DISCARDED))
			continue;
		dropped_old += pfn < again;
		dropped_again += pfn >= again;
	}
	assert_int_equal(dropped_old, 128);
	assert_int_equal(dropped_again, 0);
	giveback_free(&ages);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_call_budget_bounds_a_checkerboard, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_no_target_keeps_volatile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_budget_reads_in_turn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pass_reads_only_what_changed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_volatile_read_only_above_target, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unused_go_under_a_target, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pass_tells_the_guest_what_it_wants, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reattach_reads_every_chunk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_aged_volatile_young_after_a_gap, setup,
						teardown),
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
