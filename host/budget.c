// SPDX-License-Identifier: GPL-2.0
#include "budget.h"

void bucket_init(struct bucket *b, uint64_t rate, uint64_t burst, uint64_t now_ns)
{
	b->rate = rate;
	b->burst = burst ? burst : 1;
	b->tokens = b->burst;
	b->last_ns = now_ns;
	b->frac = 0;
}

void bucket_refill(struct bucket *b, uint64_t now_ns)
{
	uint64_t dt, earned;

	if (!b->rate || now_ns <= b->last_ns)
		return;
	dt = now_ns - b->last_ns;
	b->last_ns = now_ns;
	if (b->tokens >= b->burst) {
		b->frac = 0;
		return;
	}
	/* whole seconds and the rest apart: rate * dt would overflow after 18 s at 1e9/s */
	earned = dt / NSEC_PER_SEC * b->rate;
	b->frac += dt % NSEC_PER_SEC * b->rate;
	earned += b->frac / NSEC_PER_SEC;
	b->frac %= NSEC_PER_SEC;
	if (earned >= b->burst - b->tokens) {
		b->tokens = b->burst;
		b->frac = 0;
	} else {
		b->tokens += earned;
	}
}

uint64_t bucket_tokens(const struct bucket *b)
{
	return b->rate ? b->tokens : UINT64_MAX;
}

void bucket_spend(struct bucket *b, uint64_t n)
{
	if (b->rate)
		b->tokens -= n < b->tokens ? n : b->tokens;
}

uint64_t bucket_wait_ns(const struct bucket *b, uint64_t want, uint64_t now_ns)
{
	uint64_t need, since = now_ns > b->last_ns ? now_ns - b->last_ns : 0;

	if (!b->rate || b->tokens >= want)
		return 0;
	if (want > b->burst)
		want = b->burst;
	need = want - b->tokens;
	/* what is earned already (frac) and since last_ns counts too */
	need = (need * NSEC_PER_SEC - b->frac + b->rate - 1) / b->rate;
	return need > since ? need - since : 0;
}

void backoff_init(struct backoff *b, uint64_t min_ns, uint64_t max_ns)
{
	b->min_ns = min_ns;
	b->max_ns = max_ns > min_ns ? max_ns : min_ns;
	b->wait_ns = min_ns;
}

uint64_t backoff_next(struct backoff *b, bool found_work)
{
	if (found_work)
		b->wait_ns = b->min_ns;
	else if (b->wait_ns < b->max_ns)
		b->wait_ns = b->wait_ns * 2 < b->max_ns ? b->wait_ns * 2 : b->max_ns;
	return b->wait_ns;
}
