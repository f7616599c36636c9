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

/* Frames of @state, while above @target_bytes; adds to *@total. */
static int drop_state(struct table *t, uint8_t state, uint64_t budget, long long target_bytes,
		      const volatile sig_atomic_t *stop, uint64_t *total)
{
	uint64_t pfn = 0, len, done = 0, over;
	int64_t n;

	while (done < budget && !*stop && table_attached(t) &&
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

int giveback_pass(struct table *t, uint64_t budget, long long target_bytes,
		  const volatile sig_atomic_t *stop, struct giveback_pass *done)
{
	done->unused = done->volatile_ = 0;
	if (drop_state(t, PAGEHINT_UNUSED, budget, GIVEBACK_NO_TARGET, stop, &done->unused))
		return -1;
	if (target_bytes == GIVEBACK_NO_TARGET)
		return 0;
	return drop_state(t, PAGEHINT_VOLATILE, budget - done->unused, target_bytes, stop,
			  &done->volatile_);
}
