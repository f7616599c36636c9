/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a guest may make the host spend, and how often the host looks.
 *
 * A token bucket per resource and guest (table reads, fallocate() calls,
 * frames): tokens come at a rate, up to a burst, and a pass spends at most
 * what the bucket holds.  A guest that asks for more than its rate waits
 * for its own tokens, never for another guest's.
 *
 * A backoff per guest: a pass that found nothing to do makes the next wait
 * twice as long, up to a maximum; one that found work brings it back to
 * the minimum.  An idle guest costs the host a few wake-ups a second.
 *
 * Time is given, in nanoseconds of CLOCK_MONOTONIC, never read here: the
 * tests drive both with a clock of their own, without sleeping.
 */
#ifndef PAGEHINT_BUDGET_H
#define PAGEHINT_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#define NSEC_PER_SEC	1000000000ULL
#define NSEC_PER_MSEC	1000000ULL

struct bucket {
	uint64_t rate;		/* tokens a second; 0: unlimited */
	uint64_t burst;		/* held at most */
	uint64_t tokens;
	uint64_t last_ns;	/* when tokens was last brought up to date */
	uint64_t frac;		/* what the time since last_ns earned, in 1/NSEC_PER_SEC tokens */
};

/* Full at @now_ns: a guest that starts gets its burst at once. */
void bucket_init(struct bucket *b, uint64_t rate, uint64_t burst, uint64_t now_ns);
/* Bring the tokens up to @now_ns; a clock that goes back earns nothing. */
void bucket_refill(struct bucket *b, uint64_t now_ns);
/* What a pass may spend now (UINT64_MAX when unlimited). */
uint64_t bucket_tokens(const struct bucket *b);
/* Spend @n, at most what the bucket holds. */
void bucket_spend(struct bucket *b, uint64_t n);
/*
 * How long from @now_ns until the bucket holds @want tokens (0: it does;
 * at most a second past a full bucket).
 */
uint64_t bucket_wait_ns(const struct bucket *b, uint64_t want, uint64_t now_ns);

struct backoff {
	uint64_t min_ns, max_ns, wait_ns;
};

void backoff_init(struct backoff *b, uint64_t min_ns, uint64_t max_ns);
/* After a pass: how long until the next, by whether it found work. */
uint64_t backoff_next(struct backoff *b, bool found_work);

#endif
