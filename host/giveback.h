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

struct giveback_pass {
	uint64_t unused, volatile_;	/* frames given back */
	uint64_t punch_calls;		/* fallocate() calls it took */
};

/*
 * One pass over @t: every unused frame, then volatile frames while the
 * RAM file holds more than @target_bytes (GIVEBACK_NO_TARGET: none), at
 * most @budget frames in all, in at most @call_budget fallocate() calls
 * (what a guest can make the daemon spend: a checkerboard of unused
 * frames costs one call each).  With no call left it does not scan the
 * table either.  Stops early when *@stop becomes non-zero or the guest
 * detaches.  Returns 0, or -1 with errno from fallocate; @done counts
 * what was given back either way.
 */
int giveback_pass(struct table *t, uint64_t budget, uint64_t call_budget,
		  long long target_bytes, const volatile sig_atomic_t *stop,
		  struct giveback_pass *done);

#endif
