// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>

#include "service.h"

static uint64_t burst(uint64_t rate, unsigned int div)
{
	return rate / (div ? div : 1) ? rate / (div ? div : 1) : 1;
}

int service_init(struct service *s, struct table *t, bool aged, unsigned int min_unused,
		 const struct service_limits *l, uint64_t now_ns)
{
	memset(s, 0, sizeof(*s));
	s->t = *t;
	if (giveback_init(&s->gb, &s->t, aged, min_unused))
		return -1;
	bucket_init(&s->reads, l->reads_s, burst(l->reads_s, l->burst_div), now_ns);
	bucket_init(&s->punches, l->punches_s, burst(l->punches_s, l->burst_div), now_ns);
	bucket_init(&s->frames, l->frames_s, burst(l->frames_s, l->burst_div), now_ns);
	backoff_init(&s->pace, l->min_pass_ns, l->max_pass_ns);
	s->target_bytes = GIVEBACK_NO_TARGET;
	s->next_pass_ns = now_ns;
	return 0;
}

void service_free(struct service *s)
{
	giveback_free(&s->gb);
	table_close(&s->t);
}

int service_pass(struct service *s, uint64_t now_ns, const volatile sig_atomic_t *stop,
		 struct giveback_pass *done)
{
	struct giveback_budget b;
	uint64_t wait;
	int ret;

	bucket_refill(&s->reads, now_ns);
	bucket_refill(&s->punches, now_ns);
	bucket_refill(&s->frames, now_ns);
	b.reads = bucket_tokens(&s->reads);
	b.calls = bucket_tokens(&s->punches);
	b.frames = bucket_tokens(&s->frames);
	s->gb.clock_ns = now_ns;
	s->last_pass_ns = now_ns;
	ret = giveback_pass_within(&s->t, &s->gb, &b, s->target_bytes, stop, done);
	bucket_spend(&s->reads, done->chunks_read);
	bucket_spend(&s->punches, done->punch_calls);
	bucket_spend(&s->frames, done->unused + done->volatile_);
	s->passes++;
	s->chunks_read += done->chunks_read;

	/*
	 * A pass that ran out of a budget found work it could not do: the
	 * next comes when a token is back, not later for want of work.
	 */
	wait = bucket_wait_ns(&s->reads, 1, now_ns);
	if (bucket_wait_ns(&s->punches, 1, now_ns) > wait)
		wait = bucket_wait_ns(&s->punches, 1, now_ns);
	if (bucket_wait_ns(&s->frames, 1, now_ns) > wait)
		wait = bucket_wait_ns(&s->frames, 1, now_ns);
	if (wait) {
		s->starved++;
		s->pace.wait_ns = s->pace.min_ns;
		if (wait < s->pace.min_ns)
			wait = s->pace.min_ns;
	} else {
		wait = backoff_next(&s->pace, done->chunks_read || done->unused ||
				    done->volatile_);
	}
	s->next_pass_ns = now_ns + wait;
	return ret;
}

void service_hurry(struct service *s, uint64_t now_ns)
{
	uint64_t due = s->passes ? s->last_pass_ns + s->pace.min_ns : now_ns;

	if (due < s->next_pass_ns)
		s->next_pass_ns = due;
}

uint64_t service_volatile_ages(const struct service *s, uint64_t now_ns,
			       uint64_t frames[GIVEBACK_AGE_BINS],
			       uint64_t age_ns[GIVEBACK_AGE_BINS])
{
	uint64_t n = giveback_volatile_ages(&s->gb, now_ns, frames, age_ns);

	if (table_attached(&s->t))
		return n;
	memset(frames, 0, GIVEBACK_AGE_BINS * sizeof(*frames));
	return 0;
}
