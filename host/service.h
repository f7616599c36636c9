/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One guest as the daemon serves it: its table and RAM file, what the
 * daemon keeps between passes, its budgets and its pace.  run serves one;
 * host mode serves one per hinted libvirt domain, in one loop, each within
 * its own budget, so that a guest that makes work for the host (naming
 * every chunk of its summary, say) spends its own budget and nobody else's.
 */
#ifndef PAGEHINT_SERVICE_H
#define PAGEHINT_SERVICE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "budget.h"
#include "giveback.h"
#include "table.h"

/* What one guest may make the host spend, a second. */
struct service_limits {
	uint64_t reads_s;	/* chunks whose states are read; 0: unlimited */
	uint64_t punches_s;	/* fallocate() calls */
	uint64_t frames_s;	/* frames given back; 0: unlimited */
	/*
	 * How much of a second's budget one pass may spend at once, in
	 * parts of a second (1: a whole second's worth, as run has always
	 * had; host mode takes less, so that one guest's pass is short).
	 */
	unsigned int burst_div;
	/* the pace: a pass every min_pass_ns, backing off to max_pass_ns */
	uint64_t min_pass_ns, max_pass_ns;
};

struct service {
	struct table t;
	struct giveback gb;
	struct bucket reads, punches, frames;
	struct backoff pace;
	long long target_bytes;		/* GIVEBACK_NO_TARGET: none */
	uint64_t next_pass_ns;		/* when the next pass is due */
	uint64_t last_pass_ns;		/* when the last one was */
	/* what passes read and gave back, for status, metrics and tests */
	uint64_t passes, chunks_read, starved;
};

/*
 * Start serving the table and RAM file @t is open on (the service owns @t
 * from here, and closes it in service_free()); with @aged, unused frames
 * wait @min_unused passes.  0, or -1 with errno.
 */
int service_init(struct service *s, struct table *t, bool aged, unsigned int min_unused,
		 const struct service_limits *l, uint64_t now_ns);
void service_free(struct service *s);

/* Whether a pass is due at @now_ns. */
static inline bool service_due(const struct service *s, uint64_t now_ns)
{
	return now_ns >= s->next_pass_ns;
}

/*
 * One pass at @now_ns within the guest's budgets, and when the next is
 * due: soon after one that found work, later after each that found none,
 * and once the budget it ran out of has come back.  Returns 0, or -1 with
 * errno from fallocate.
 */
int service_pass(struct service *s, uint64_t now_ns, const volatile sig_atomic_t *stop,
		 struct giveback_pass *done);

/*
 * Make the next pass due as soon as the pace allows: at once if the last
 * pass was at least min_pass_ns before @now_ns, else then.  For a target
 * that changed, which a pass acts on and tells the guest.
 */
void service_hurry(struct service *s, uint64_t now_ns);

/*
 * The guest's volatile frames by age at @now_ns, for the host budget
 * (giveback_volatile_ages()).  Returns their number; 0 while the guest is
 * detached, when it would give nothing back.
 */
uint64_t service_volatile_ages(const struct service *s, uint64_t now_ns,
			       uint64_t frames[GIVEBACK_AGE_BINS],
			       uint64_t age_ns[GIVEBACK_AGE_BINS]);

#endif
