/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pagehintd's policy in one place: which frames one pass gives back, in
 * which order and how many.  Unused frames cost the guest nothing (it gets
 * a zero page back), so all of them go.  Volatile frames cost a re-read
 * from the guest's disk, so they go only while the host holds more of the
 * guest than the target.  Stable frames are never touched.
 *
 * A pass reads the states of the chunks (2 MiB) that the guest's change
 * summary names, and of those where an earlier pass left frames it may
 * still give back, not the whole table: what a pass costs grows with what
 * the guest changed, not with its size.
 */
#ifndef PAGEHINT_GIVEBACK_H
#define PAGEHINT_GIVEBACK_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "table.h"

#define GIVEBACK_NO_TARGET	(-1LL)
#define GIVEBACK_MAX_PASSES	255	/* an age saturates there */

/*
 * What the daemon remembers between passes, in its private memory.
 *
 * Chunks, one bit each: those the next pass reads because an earlier one
 * saw unused frames there that it did not give back (too young, or the
 * budget ran out), and those where it saw volatile frames, read while the
 * host is above its target.
 *
 * With the aged policy also, for each frame, the state it had when its
 * chunk was last read and the pass at which it was first read in that
 * state.  An unused frame goes once it has been unused for min_unused
 * passes, so that a frame the guest frees and takes again soon costs the
 * host no punch and the guest no fault on a fresh zero page.  Under a
 * target, volatile frames go oldest first.  The summary names chunks where
 * frames became unused or volatile, not those where they became stable,
 * so a named chunk that was not read in the last pass has its unused and
 * volatile frames start their ages again: any of them may have been taken
 * back and given up meanwhile.
 *
 * With every policy, for the host budget (share.h), each chunk's volatile
 * frames as its last read counted them (less those given back since), and
 * since when, on the caller's clock: when the chunk was first read with
 * volatile frames, or last read after the summary named it (something in
 * it changed).  A chunk's age is so the age of its youngest change, in
 * time, not in passes: guests whose passes come at different paces are
 * compared on one clock.
 */
struct giveback {
	uint64_t nr_chunks;
	uint64_t *changed;		/* named by the summary, or all: read them */
	uint64_t *unused_left;		/* unused frames seen, not given back */
	uint64_t *volatile_left;	/* volatile frames seen, not given back */
	uint64_t epoch;			/* the guest's epoch at the last pass */
	/* the aged policy only */
	uint8_t *state;
	uint16_t *since;
	uint16_t *last_read;		/* per chunk: the pass that last read it */
	uint16_t pass;
	unsigned int min_unused;
	uint64_t read_cursor;		/* the chunk a pass that ran out of reads stopped at */
	/* every policy: per chunk, for the host budget */
	uint16_t *volatile_count;
	uint64_t *volatile_since;	/* on the clock of clock_ns */
	uint64_t clock_ns;		/* the caller's time of the pass (service_pass()) */
};

/*
 * For a table @t; with @aged, unused frames wait @min_unused passes.  0, or
 * -1 (errno ENOMEM).
 */
int giveback_init(struct giveback *g, const struct table *t, bool aged, unsigned int min_unused);
void giveback_free(struct giveback *g);

struct giveback_pass {
	uint64_t unused, volatile_;	/* frames given back */
	uint64_t punch_calls;		/* fallocate() calls it took */
	uint64_t chunks_read;		/* chunks whose states it read */
};

/*
 * One pass over @t: every unused frame (aged: every one unused for
 * g->min_unused passes), then volatile frames (aged: the oldest first)
 * while the RAM file holds more than @target_bytes (GIVEBACK_NO_TARGET:
 * none), at most @budget frames in all, in at most @call_budget
 * fallocate() calls (what a guest can make the daemon spend: a
 * checkerboard of unused frames costs one call each).  With no call left
 * it reads nothing either.  Stops early when *@stop becomes non-zero or
 * the guest detaches.  Then tells the guest how many frames it is still
 * above the target (table_set_host_wants()).  Returns 0, or -1 with errno
 * from fallocate; @done counts what was given back either way.
 */
int giveback_pass(struct table *t, struct giveback *g, uint64_t budget, uint64_t call_budget,
		  long long target_bytes, const volatile sig_atomic_t *stop,
		  struct giveback_pass *done);

/*
 * What one pass may spend: frames given back, fallocate() calls, and
 * chunks whose states it reads (what a guest that names every chunk of its
 * summary costs the host: 512 bytes of table each).
 */
struct giveback_budget {
	uint64_t frames, calls, reads;
};

/*
 * giveback_pass() within @b: the chunks it does not get to read stay to
 * be read by the next pass, which starts where this one stopped.
 */
int giveback_pass_within(struct table *t, struct giveback *g, const struct giveback_budget *b,
			 long long target_bytes, const volatile sig_atomic_t *stop,
			 struct giveback_pass *done);

#define GIVEBACK_AGE_BINS	256

/*
 * The volatile frames the passes saw and did not give back, by age at
 * @now_ns, in GIVEBACK_AGE_BINS bins of ages that grow by an eighth from
 * one to the next (from 1 ms to weeks): @frames[b] frames are at least
 * @age_ns[b] old.  Reads none of the table, only what the passes counted:
 * its cost is a look at each chunk's count.  Returns their number.
 */
uint64_t giveback_volatile_ages(const struct giveback *g, uint64_t now_ns,
				uint64_t frames[GIVEBACK_AGE_BINS],
				uint64_t age_ns[GIVEBACK_AGE_BINS]);

#endif
