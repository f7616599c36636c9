// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>

#include "giveback.h"

#define MAX_RUN		512	/* frames per punch: 2 MiB */

int giveback_ages_init(struct giveback_ages *a, uint64_t nr_frames, unsigned int min_unused)
{
	a->state = calloc(nr_frames ? nr_frames : 1, 1);
	a->passes = calloc(nr_frames ? nr_frames : 1, 1);
	a->nr_frames = nr_frames;
	a->min_unused = min_unused > GIVEBACK_MAX_PASSES ? GIVEBACK_MAX_PASSES : min_unused;
	if (!a->state || !a->passes) {
		giveback_ages_free(a);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

void giveback_ages_free(struct giveback_ages *a)
{
	free(a->state);
	free(a->passes);
	a->state = a->passes = NULL;
}

/*
 * One read of every frame's state: a frame in the state it had at the last
 * pass is a pass older; any other starts again at 0.  Also counts the
 * volatile frames of each age into @volatile_by_age.
 */
static void age_frames(const struct table *t, struct giveback_ages *a,
		       uint64_t volatile_by_age[GIVEBACK_MAX_PASSES + 1])
{
	unsigned int r;
	uint64_t p;

	for (r = 0; r < t->nr_ranges; r++) {
		uint64_t end = t->ranges[r].first_pfn + t->ranges[r].nr_frames;

		for (p = t->ranges[r].first_pfn; p < end && p < a->nr_frames; p++) {
			uint8_t s = table_state(t, p);

			if (s != a->state[p]) {
				a->state[p] = s;
				a->passes[p] = 0;
			} else if (a->passes[p] < GIVEBACK_MAX_PASSES) {
				a->passes[p]++;
			}
			if (s == PAGEHINT_VOLATILE)
				volatile_by_age[a->passes[p]]++;
		}
	}
}

/* The youngest age at which the oldest volatile frames make up @frames. */
static unsigned int oldest_volatile(const uint64_t volatile_by_age[GIVEBACK_MAX_PASSES + 1],
				    uint64_t frames)
{
	uint64_t sum = 0;
	unsigned int age;

	for (age = GIVEBACK_MAX_PASSES; age > 0; age--) {
		sum += volatile_by_age[age];
		if (sum >= frames)
			break;
	}
	return age;
}

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
 * Frames of @state, at least @min_passes old by @passes (NULL: any), while
 * above @target_bytes and while the daemon's punch calls stay below
 * @calls_end; adds to *@total.
 */
static int drop_state(struct table *t, uint8_t state, const uint8_t *passes,
		      unsigned int min_passes, uint64_t budget, uint64_t calls_end,
		      long long target_bytes, const volatile sig_atomic_t *stop, uint64_t *total)
{
	uint64_t pfn = 0, len, done = 0, over;
	int64_t n;

	while (done < budget && t->host.punch_calls < calls_end && !*stop && table_attached(t) &&
	       (over = over_target(t, target_bytes)) &&
	       (len = table_next_run_aged(t, state, &pfn, MAX_RUN, passes, min_passes))) {
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

int giveback_pass(struct table *t, struct giveback_ages *ages, uint64_t budget,
		  uint64_t call_budget, long long target_bytes, const volatile sig_atomic_t *stop,
		  struct giveback_pass *done)
{
	uint64_t volatile_by_age[GIVEBACK_MAX_PASSES + 1] = { 0 };
	uint64_t calls = t->host.punch_calls;
	uint64_t calls_end = call_budget > UINT64_MAX - calls ? UINT64_MAX : calls + call_budget;
	const uint8_t *passes = ages ? ages->passes : NULL;
	unsigned int min_volatile = 0;
	int ret;

	done->unused = done->volatile_ = done->punch_calls = 0;
	/* nothing to spend: not even the scan */
	if (!call_budget || !budget)
		return 0;
	if (ages)
		age_frames(t, ages, volatile_by_age);
	ret = drop_state(t, PAGEHINT_UNUSED, passes, ages ? ages->min_unused : 0, budget,
			 calls_end, GIVEBACK_NO_TARGET, stop, &done->unused);
	if (!ret && target_bytes != GIVEBACK_NO_TARGET) {
		if (ages)
			min_volatile = oldest_volatile(volatile_by_age,
						       over_target(t, target_bytes));
		ret = drop_state(t, PAGEHINT_VOLATILE, passes, min_volatile,
				 budget - done->unused, calls_end, target_bytes, stop,
				 &done->volatile_);
	}
	done->punch_calls = t->host.punch_calls - calls;
	return ret;
}
