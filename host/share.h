/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One memory budget for every guest of the host: how much each guest may
 * hold so that together they hold no more than the budget.
 *
 * While the guests hold less than the budget, nobody is asked for
 * anything: every target is GIVEBACK_NO_TARGET, so the guests keep their
 * clean cache and their scanners rest (host_wants 0).  While they hold
 * more, the excess is asked for
 *   1. from the volatile frames the daemon knows of, the oldest of all
 *      guests first (not guest by guest), a guest's ages scaled by its
 *      weight (a guest of weight 200 has its frames look half as old as
 *      one of weight 100, and so keeps them longer); guests whose frames
 *      are as old give in proportion to how many they have;
 *   2. then, for what is still missing, from every guest above its floor
 *      in proportion to what it still holds above the floor (less what
 *      step 1 asked of it), divided by its weight: those guests are asked
 *      to make more volatile frames (their host_wants grows), and what
 *      they were asked beyond what they have to give is their shortfall.
 * A guest's unused frames are not counted: they go anyway, in every pass
 * before its volatile ones, and bring it nearer its target at no cost;
 * but the daemon cannot tell from the table which of them the host still
 * holds (a frame the guest never touched is unused and holds nothing).
 * No guest is ever asked to go below its floor.  A guest that cannot give
 * what it was asked (its working set is its working set) keeps its
 * shortfall: the daemon reports it and does not spin on it, since targets
 * are worked out once a tick and each guest's passes stay within its own
 * budget of reads and fallocate() calls.
 *
 * Pure: what the guests hold, what they have to give and how old it is
 * are given, so that the tests can set up any mix of guests without a
 * guest.
 */
#ifndef PAGEHINT_SHARE_H
#define PAGEHINT_SHARE_H

#include <stddef.h>
#include <stdint.h>

#include "giveback.h"

#define SHARE_DEFAULT_WEIGHT	100
#define SHARE_MAX_WEIGHT	10000
#define SHARE_AGES		GIVEBACK_AGE_BINS

struct share_guest {
	/* what the daemon knows of the guest */
	uint64_t held;			/* bytes its RAM file holds */
	uint64_t floor;			/* bytes it is never asked to go below */
	unsigned int weight;		/* 1 .. SHARE_MAX_WEIGHT; 0: the default */
	/*
	 * Its volatile frames by age: volatile[i] frames are age_ns[i] old.
	 * NULL when it has none to give (or none whose age is known).
	 */
	const uint64_t *volatile_;
	const uint64_t *age_ns;
	/* what share_budget() worked out */
	long long target;		/* bytes it may hold; GIVEBACK_NO_TARGET: keep all */
	uint64_t asked;			/* frames it is asked to give back */
	uint64_t shortfall;		/* of them, frames it has nothing to give for */
};

/* What the guests hold together and what is missing to meet the budget. */
struct share_total {
	uint64_t held;			/* bytes */
	uint64_t over;			/* frames above the budget */
	uint64_t unmet;			/* frames nobody above a floor can be asked for */
};

/*
 * Work out every guest's target so that @n guests @g hold no more than
 * @budget bytes, as the comment at the top says.  Returns 0, or -1 (errno
 * ENOMEM) with every target left at GIVEBACK_NO_TARGET.
 */
int share_budget(struct share_guest *g, size_t n, uint64_t budget, struct share_total *total);

#endif
