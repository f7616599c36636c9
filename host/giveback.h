/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pagehintd's policy in one place: which frames one pass gives back, in
 * which order and how many.  Unused frames cost the guest nothing (it gets
 * a zero page back), so all of them go.  Volatile frames cost a re-read
 * from the guest's disk, so they go only while the host holds more of the
 * guest than the target.  Stable frames are never touched.
 */
#ifndef PAGEHINT_GIVEBACK_H
#define PAGEHINT_GIVEBACK_H

#include <signal.h>
#include <stdint.h>

#include "table.h"

#define GIVEBACK_NO_TARGET	(-1LL)
#define GIVEBACK_MAX_PASSES	255	/* an age saturates there */

/*
 * The aged policy's memory, private to the daemon: for each frame, the
 * state it had at the last pass, and for how many passes in a row it has
 * had it (up to GIVEBACK_MAX_PASSES), from one read of its byte per pass.
 * An unused frame goes once it has been unused for min_unused passes, so
 * that a frame the guest frees and takes again soon costs the host no
 * punch and the guest no fault on a fresh zero page.  Under a target,
 * volatile frames go oldest first.
 */
struct giveback_ages {
	uint8_t *state;
	uint8_t *passes;
	uint64_t nr_frames;
	unsigned int min_unused;
};

/* Ages for a table of @nr_frames frames; 0 or -1 (errno ENOMEM). */
int giveback_ages_init(struct giveback_ages *a, uint64_t nr_frames, unsigned int min_unused);
void giveback_ages_free(struct giveback_ages *a);

struct giveback_pass {
	uint64_t unused, volatile_;	/* frames given back */
	uint64_t punch_calls;		/* fallocate() calls it took */
};

/*
 * One pass over @t: every unused frame (with @ages, every one unused for
 * ages->min_unused passes), then volatile frames (with @ages, the oldest
 * first) while the RAM file holds more than @target_bytes
 * (GIVEBACK_NO_TARGET: none), at
 * most @budget frames in all, in at most @call_budget fallocate() calls
 * (what a guest can make the daemon spend: a checkerboard of unused
 * frames costs one call each).  With no call left it does not scan the
 * table either.  Stops early when *@stop becomes non-zero or the guest
 * detaches.  Returns 0, or -1 with errno from fallocate; @done counts
 * what was given back either way.
 */
int giveback_pass(struct table *t, struct giveback_ages *ages, uint64_t budget,
		  uint64_t call_budget, long long target_bytes, const volatile sig_atomic_t *stop,
		  struct giveback_pass *done);

#endif
