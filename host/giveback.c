// SPDX-License-Identifier: GPL-2.0
#include "giveback.h"

#define MAX_RUN		512	/* frames per punch: 2 MiB */

/* Frames still to give back to reach the target (UINT64_MAX: no target). */
static uint64_t over_target(const struct table *t, long long target_bytes)
{
	uint64_t held;

	if (target_bytes == GIVEBACK_NO_TARGET)
		return UINT64_MAX;
	held = ram_resident(t);
	return held > (uint64_t)target_bytes ? (held - target_bytes + 4095) / 4096 : 0;
}

/*
 * Frames of @state, while above @target_bytes and while the daemon's
 * punch calls stay below @calls_end; adds to *@total.
 */
static int drop_state(struct table *t, uint8_t state, uint64_t budget, uint64_t calls_end,
		      long long target_bytes, const volatile sig_atomic_t *stop, uint64_t *total)
{
	uint64_t pfn = 0, len, done = 0, over;
	int64_t n;

	while (done < budget && t->host.punch_calls < calls_end && !*stop && table_attached(t) &&
	       (over = over_target(t, target_bytes)) &&
	       (len = table_next_run(t, state, &pfn, MAX_RUN))) {
		if (len > budget - done)
			len = budget - done;
		if (len > over)
			len = over;
		n = table_drop_run(t, state, pfn, len);
		if (n < 0)
			return -1;
		done += n;
		*total += n;
		pfn += len;
	}
	return 0;
}

int giveback_pass(struct table *t, uint64_t budget, uint64_t call_budget,
		  long long target_bytes, const volatile sig_atomic_t *stop,
		  struct giveback_pass *done)
{
	uint64_t calls = t->host.punch_calls;
	uint64_t calls_end = call_budget > UINT64_MAX - calls ? UINT64_MAX : calls + call_budget;
	int ret;

	done->unused = done->volatile_ = 0;
	ret = drop_state(t, PAGEHINT_UNUSED, budget, calls_end, GIVEBACK_NO_TARGET, stop,
			 &done->unused);
	if (!ret && target_bytes != GIVEBACK_NO_TARGET)
		ret = drop_state(t, PAGEHINT_VOLATILE, budget - done->unused, calls_end,
				 target_bytes, stop, &done->volatile_);
	done->punch_calls = t->host.punch_calls - calls;
	return ret;
}
