// SPDX-License-Identifier: GPL-2.0
/*
 * The host budget (share.h): which guest gives what when the guests
 * together hold more than the budget.  The policy is a pure function, so
 * most tests are made-up guests; the last ones serve guests on real table
 * and RAM files, with the test's own clock, and check that what the
 * budget asks is what the passes give back, the oldest frames of all
 * guests first.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <endian.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../service.h"
#include "../share.h"

#define MiB	(1ULL << 20)
#define FRAME	4096ULL
#define SEC	NSEC_PER_SEC

/* Made-up guests: what each holds, its floor and weight, its volatile frames by age. */
struct made_up {
	uint64_t volatile_[SHARE_AGES], age_ns[SHARE_AGES];
};

static void guest(struct share_guest *g, struct made_up *m, uint64_t held_mib,
		  uint64_t floor_mib, unsigned int weight)
{
	unsigned int a;

	memset(g, 0, sizeof(*g));
	memset(m, 0, sizeof(*m));
	g->held = held_mib * MiB;
	g->floor = floor_mib * MiB;
	g->weight = weight;
	for (a = 0; a < SHARE_AGES; a++)
		m->age_ns[a] = a * SEC;		/* a pass a second */
	g->volatile_ = m->volatile_;
	g->age_ns = m->age_ns;
}

/* What every outcome must satisfy, whatever the guests. */
static void check_invariants(const struct share_guest *g, size_t n, uint64_t budget,
			     const struct share_total *total)
{
	uint64_t held = 0, asked = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		held += g[i].held;
		asked += g[i].asked;
		assert_true(g[i].shortfall <= g[i].asked);
		if (!g[i].asked) {
			assert_int_equal(g[i].target, GIVEBACK_NO_TARGET);
			continue;
		}
		/* never below its floor */
		assert_true(g[i].target >= (long long)g[i].floor);
		assert_int_equal(g[i].target, g[i].held - g[i].asked * FRAME);
	}
	assert_int_equal(total->held, held);
	assert_int_equal(total->over, held > budget ? (held - budget + FRAME - 1) / FRAME : 0);
	/* what is over is asked of somebody, or nobody could be asked for it */
	assert_int_equal(asked + total->unmet, total->over);
}

static void test_within_budget_asks_nothing(void **state)
{
	struct share_guest g[2];
	struct made_up m[2];
	struct share_total total;

	(void)state;
	guest(&g[0], &m[0], 300, 0, 0);
	guest(&g[1], &m[1], 200, 0, 0);
	m[0].volatile_[9] = 1000;
	assert_int_equal(share_budget(g, 2, 500 * MiB, &total), 0);
	check_invariants(g, 2, 500 * MiB, &total);
	assert_int_equal(total.over, 0);
	assert_int_equal(g[0].target, GIVEBACK_NO_TARGET);
	assert_int_equal(g[1].target, GIVEBACK_NO_TARGET);
	assert_int_equal(g[0].asked + g[1].asked, 0);
}

/* Not guest by guest: the oldest frames of all guests go first. */
static void test_oldest_first_across_guests(void **state)
{
	struct share_guest g[3];
	struct made_up m[3];
	struct share_total total;

	(void)state;
	guest(&g[0], &m[0], 400, 0, 0);
	guest(&g[1], &m[1], 400, 0, 0);
	guest(&g[2], &m[2], 400, 0, 0);
	m[0].volatile_[5] = 100;	/* 5 s old */
	m[0].volatile_[40] = 100;	/* 40 s old */
	m[1].volatile_[20] = 100;
	m[2].volatile_[2] = 1000;	/* the youngest, and the most */
	/* 250 frames over: guest 0's old 100, guest 1's 100, then 50 of guest 0's young */
	assert_int_equal(share_budget(g, 3, 1200 * MiB - 250 * FRAME, &total), 0);
	check_invariants(g, 3, 1200 * MiB - 250 * FRAME, &total);
	assert_int_equal(g[0].asked, 150);
	assert_int_equal(g[1].asked, 100);
	assert_int_equal(g[2].asked, 0);
	assert_int_equal(g[2].target, GIVEBACK_NO_TARGET);
	assert_int_equal(g[0].shortfall + g[1].shortfall, 0);
	assert_int_equal(total.unmet, 0);
}

/* A weight of 200 makes a guest's frames look half as old. */
static void test_weight_scales_age(void **state)
{
	struct share_guest g[2];
	struct made_up m[2];
	struct share_total total;

	(void)state;
	guest(&g[0], &m[0], 400, 0, 200);
	guest(&g[1], &m[1], 400, 0, 100);
	m[0].volatile_[10] = 100;	/* 10 s, as old as 5 s */
	m[1].volatile_[6] = 100;	/* 6 s */
	assert_int_equal(share_budget(g, 2, 800 * MiB - 120 * FRAME, &total), 0);
	check_invariants(g, 2, 800 * MiB - 120 * FRAME, &total);
	assert_int_equal(g[1].asked, 100);
	assert_int_equal(g[0].asked, 20);
	/* the same with equal weights: guest 0's older frames go first */
	g[0].weight = 100;
	assert_int_equal(share_budget(g, 2, 800 * MiB - 120 * FRAME, &total), 0);
	assert_int_equal(g[0].asked, 100);
	assert_int_equal(g[1].asked, 20);
}

/* Nobody is asked below the floor; what the floor keeps, the others give. */
static void test_floor_is_respected(void **state)
{
	struct share_guest g[2];
	struct made_up m[2];
	struct share_total total;
	uint64_t budget = 800 * MiB - 200 * FRAME;

	(void)state;
	/* guest 0 has the oldest frames, but only 30 frames above its floor */
	guest(&g[0], &m[0], 400, 0, 0);
	g[0].floor = g[0].held - 30 * FRAME;
	guest(&g[1], &m[1], 400, 0, 0);
	m[0].volatile_[50] = 500;
	m[1].volatile_[10] = 150;
	assert_int_equal(share_budget(g, 2, budget, &total), 0);
	check_invariants(g, 2, budget, &total);
	assert_int_equal(g[0].asked, 30);
	assert_int_equal(g[0].shortfall, 0);
	/* 150 volatile, then 20 more it must make volatile */
	assert_int_equal(g[1].asked, 170);
	assert_int_equal(g[1].shortfall, 20);
	/* a floor above what it holds: never asked at all */
	g[0].floor = g[0].held + MiB;
	assert_int_equal(share_budget(g, 2, budget, &total), 0);
	check_invariants(g, 2, budget, &total);
	assert_int_equal(g[0].asked, 0);
	assert_int_equal(g[0].target, GIVEBACK_NO_TARGET);
	assert_int_equal(g[1].asked, 200);
}

/*
 * No volatile frames known: every guest above its floor is asked, in
 * proportion to its room divided by its weight, and all of it is
 * shortfall.
 */
static void test_shortfall_in_proportion(void **state)
{
	struct share_guest g[2];
	struct made_up m[2];
	struct share_total total;
	uint64_t budget;

	(void)state;
	guest(&g[0], &m[0], 100, 0, 0);
	guest(&g[1], &m[1], 300, 0, 0);
	budget = 400 * MiB - 4000 * FRAME;
	assert_int_equal(share_budget(g, 2, budget, &total), 0);
	check_invariants(g, 2, budget, &total);
	/* rooms 25600 and 76800 frames: a quarter and three quarters, to a frame */
	assert_true(g[0].asked >= 999 && g[0].asked <= 1001);
	assert_int_equal(g[0].asked + g[1].asked, 4000);
	assert_int_equal(g[0].shortfall, g[0].asked);
	assert_int_equal(g[1].shortfall, g[1].asked);
	/* weight 50: guest 0 counts twice its room, 2 parts to 3 */
	g[0].weight = 50;
	assert_int_equal(share_budget(g, 2, budget, &total), 0);
	check_invariants(g, 2, budget, &total);
	assert_true(g[0].asked >= 1599 && g[0].asked <= 1601);
	/* a part larger than a guest's room goes to the others */
	g[0].weight = 1;
	g[0].floor = g[0].held - 10 * FRAME;
	assert_int_equal(share_budget(g, 2, budget, &total), 0);
	check_invariants(g, 2, budget, &total);
	assert_int_equal(g[0].asked, 10);
	assert_int_equal(g[1].asked, 3990);
}

/* Everybody at the floor: what is over is nobody's, and said so. */
static void test_unmet_when_all_at_floor(void **state)
{
	struct share_guest g[2];
	struct made_up m[2];
	struct share_total total;

	(void)state;
	guest(&g[0], &m[0], 100, 100, 0);
	guest(&g[1], &m[1], 100, 200, 0);
	m[0].volatile_[3] = 1000;
	assert_int_equal(share_budget(g, 2, 150 * MiB, &total), 0);
	check_invariants(g, 2, 150 * MiB, &total);
	assert_int_equal(total.unmet, 50 * MiB / FRAME);
	assert_int_equal(g[0].target, GIVEBACK_NO_TARGET);
	assert_int_equal(g[1].target, GIVEBACK_NO_TARGET);
}

/* The budget changes: raised, nobody is asked; lowered, more is. */
static void test_budget_changes(void **state)
{
	struct share_guest g[2];
	struct made_up m[2];
	struct share_total total;
	uint64_t before;

	(void)state;
	guest(&g[0], &m[0], 400, 0, 0);
	guest(&g[1], &m[1], 400, 0, 0);
	m[0].volatile_[8] = 1000;
	m[1].volatile_[4] = 1000;
	assert_int_equal(share_budget(g, 2, 800 * MiB - 500 * FRAME, &total), 0);
	assert_int_equal(g[0].asked, 500);
	assert_int_equal(g[1].asked, 0);
	before = g[0].asked + g[1].asked;
	assert_int_equal(share_budget(g, 2, 800 * MiB - 1500 * FRAME, &total), 0);
	check_invariants(g, 2, 800 * MiB - 1500 * FRAME, &total);
	assert_int_equal(g[0].asked, 1000);
	assert_int_equal(g[1].asked, 500);
	assert_true(g[0].asked + g[1].asked > before);
	assert_int_equal(share_budget(g, 2, 1024 * MiB, &total), 0);
	assert_int_equal(g[0].target, GIVEBACK_NO_TARGET);
	assert_int_equal(g[1].target, GIVEBACK_NO_TARGET);
	/* no guests at all */
	assert_int_equal(share_budget(g, 0, MiB, &total), 0);
	assert_int_equal(total.over, 0);
}

/* Many mixes of guests, drawn at random (the same every run): the invariants hold. */
static void test_random_mixes(void **state)
{
	static struct share_guest g[16];
	static struct made_up m[16];
	struct share_total total;
	uint64_t x = 88172645463325252ULL, held, budget;
	unsigned int round, i, a;

	(void)state;
	for (round = 0; round < 2000; round++) {
		unsigned int n = 1 + round % 16;

		held = 0;
		for (i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			guest(&g[i], &m[i], 1 + x % 4096, x >> 12 & 1 ? (x >> 20) % 2048 : 0,
			      (x >> 32) % 3 ? (unsigned int)((x >> 40) % 300) : 0);
			for (a = 0; a < SHARE_AGES; a += 1 + (x >> 50) % 7)
				m[i].volatile_[a] = (x >> (a % 40)) % 3000;
			if (x >> 60 & 1)
				g[i].volatile_ = NULL;
			held += g[i].held;
		}
		budget = held / 4 + (x >> 24) % (held + 1);
		assert_int_equal(share_budget(g, n, budget, &total), 0);
		check_invariants(g, n, budget, &total);
	}
}

/* Real guests: a table and RAM file each, served by the aged policy. */
struct real {
	char table[96], ram[96];
	struct service s;
};

static char dir[64];

static const struct service_limits limits = {
	.reads_s = 0, .punches_s = 0, .frames_s = 0, .burst_div = 1,
	.min_pass_ns = SEC, .max_pass_ns = SEC,
};

static const volatile sig_atomic_t not_stopping;

static void real_start(struct real *r, const char *name, uint64_t ram_bytes)
{
	char err[256];
	struct table t;

	snprintf(r->table, sizeof(r->table), "%s/%s.table", dir, name);
	snprintf(r->ram, sizeof(r->ram), "%s/%s.ram", dir, name);
	if (table_create(r->table, r->ram, ram_bytes, true, err, sizeof(err)) ||
	    table_open(&t, r->table, r->ram, err, sizeof(err)))
		fail_msg("%s: %s", name, err);
	/* the guest wrote all of its RAM */
	assert_int_equal(fallocate(t.ram_fd, 0, 0, ram_bytes), 0);
	t.hdr->guest_epoch = t.hdr->host_epoch;
	assert_int_equal(service_init(&r->s, &t, true, 2, &limits, 0), 0);
}

static void real_stop(struct real *r)
{
	service_free(&r->s);
	unlink(r->table);
	unlink(r->ram);
}

/* Frames @first.. (@n) become volatile, as the guest marks them. */
static void mark_volatile(struct real *r, uint64_t first, uint64_t n)
{
	struct table *t = &r->s.t;
	uint64_t pfn, c;

	for (pfn = first; pfn < first + n; pfn++) {
		__atomic_store_n(&t->states[pfn], PAGEHINT_VOLATILE, __ATOMIC_RELEASE);
		c = pfn / PAGEHINT_CHUNK_FRAMES;
		__atomic_fetch_or(&t->summary[c / 64], htole64(1ULL << (c % 64)),
				  __ATOMIC_SEQ_CST);
	}
}

static void pass(struct real *r, uint64_t now)
{
	struct giveback_pass done;

	assert_int_equal(service_pass(&r->s, now, &not_stopping, &done), 0);
}

static uint64_t dropped_volatile_in(const struct real *r, uint64_t first, uint64_t n)
{
	uint64_t pfn, k = 0;

	for (pfn = first; pfn < first + n; pfn++)
		k += table_state(&r->s.t, pfn) == (PAGEHINT_VOLATILE | PAGEHINT_DISCARDED);
	return k;
}

/* The one bin holding frames, and that it holds @frames of an age of about @age_ns. */
static void one_bin(const uint64_t *frames, const uint64_t *ages, uint64_t n, uint64_t age_ns)
{
	unsigned int b, found = 0;

	for (b = 0; b < SHARE_AGES; b++) {
		if (!frames[b])
			continue;
		found++;
		assert_int_equal(frames[b], n);
		/* a bin is an eighth of a doubling wide: its floor is within 12.5% */
		assert_true(ages[b] <= age_ns);
		assert_true(ages[b] >= age_ns - age_ns / 8 - NSEC_PER_MSEC);
	}
	assert_int_equal(found, 1);
}

/*
 * What real guest @r offers the budget at @now: what its RAM file holds,
 * its volatile frames by age (in @frames and @ages, which @g points to).
 * Returns how many volatile frames it has.
 */
static uint64_t offer(struct share_guest *g, const struct real *r, uint64_t now,
		      uint64_t *frames, uint64_t *ages)
{
	g->held = ram_resident(&r->s.t);
	g->volatile_ = frames;
	g->age_ns = ages;
	return service_volatile_ages(&r->s, now, frames, ages);
}

/*
 * Two guests: A's cache went volatile at 1 s, B's at 4 s, and B has more.
 * The ages are the test clock's; the budget asks A's old frames first,
 * then B's; the passes give back exactly those, and the frames given back
 * are no longer counted.
 */
static void test_real_guests_oldest_go_first(void **state)
{
	uint64_t frames[2][SHARE_AGES], ages[2][SHARE_AGES];
	struct share_guest g[2] = { 0 };
	struct share_total total;
	struct real a, b;
	uint64_t t;

	(void)state;
	real_start(&a, "a", 64 * MiB);
	real_start(&b, "b", 64 * MiB);
	/* 0 s: the first passes read every chunk of the new guests */
	pass(&a, 0);
	pass(&b, 0);
	mark_volatile(&a, 4096, 1000);
	pass(&a, 1 * SEC);
	pass(&b, 1 * SEC);
	mark_volatile(&b, 8192, 3000);
	for (t = 4; t <= 40; t++) {
		pass(&a, t * SEC);
		pass(&b, t * SEC);
	}
	t = 40 * SEC;
	assert_int_equal(offer(&g[0], &a, t, frames[0], ages[0]), 1000);
	assert_int_equal(offer(&g[1], &b, t, frames[1], ages[1]), 3000);
	assert_int_equal(g[0].held, 64 * MiB);
	/* read at the pass of 1 s (A) and of 4 s (B) */
	one_bin(frames[0], ages[0], 1000, 39 * SEC);
	one_bin(frames[1], ages[1], 3000, 36 * SEC);
	assert_int_equal(share_budget(g, 2, 128 * MiB - 1500 * FRAME, &total), 0);
	assert_int_equal(g[0].asked, 1000);
	assert_int_equal(g[1].asked, 500);
	a.s.target_bytes = g[0].target;
	b.s.target_bytes = g[1].target;
	pass(&a, t);
	pass(&b, t);
	assert_int_equal(dropped_volatile_in(&a, 4096, 1000), 1000);
	assert_int_equal(dropped_volatile_in(&b, 8192, 3000), 500);
	assert_int_equal(ram_resident(&a.s.t) + ram_resident(&b.s.t), 128 * MiB - 1500 * FRAME);
	/* what was given back is no longer counted, and the budget is met */
	assert_int_equal(offer(&g[0], &a, t, frames[0], ages[0]), 0);
	assert_int_equal(offer(&g[1], &b, t, frames[1], ages[1]), 2500);
	assert_int_equal(share_budget(g, 2, 128 * MiB - 1500 * FRAME, &total), 0);
	assert_int_equal(total.over, 0);
	real_stop(&a);
	real_stop(&b);
}

/*
 * Ages are time, not passes: a guest looked at every 125 ms and one looked
 * at every 2 s, whose caches went volatile at the same moment, are as old
 * ten minutes later, past any count of passes, and give alike.
 */
static void test_pace_does_not_age(void **state)
{
	uint64_t frames[2][SHARE_AGES], ages[2][SHARE_AGES];
	struct share_guest g[2] = { 0 };
	struct share_total total;
	struct real a, b;
	uint64_t t;

	(void)state;
	real_start(&a, "fast", 32 * MiB);
	real_start(&b, "slow", 32 * MiB);
	pass(&a, 0);
	pass(&b, 0);
	mark_volatile(&a, 1024, 2000);
	mark_volatile(&b, 1024, 2000);
	for (t = SEC / 8; t <= 600 * SEC; t += SEC / 8) {
		pass(&a, t);
		if (!(t % (2 * SEC)))
			pass(&b, t);
	}
	assert_int_equal(offer(&g[0], &a, t, frames[0], ages[0]), 2000);
	assert_int_equal(offer(&g[1], &b, t, frames[1], ages[1]), 2000);
	one_bin(frames[0], ages[0], 2000, t - SEC / 8);
	one_bin(frames[1], ages[1], 2000, t - 2 * SEC);
	assert_int_equal(share_budget(g, 2, 64 * MiB - 1001 * FRAME, &total), 0);
	/* as old, in one bin: half each, the odd frame to one of them */
	assert_true(g[0].asked == 500 || g[0].asked == 501);
	assert_int_equal(g[0].asked + g[1].asked, 1001);
	real_stop(&a);
	real_stop(&b);
}

/* A changed target hurries the next pass, but never past the pace's minimum. */
static void test_hurry_keeps_the_pace(void **state)
{
	struct real a;

	(void)state;
	real_start(&a, "hurry", 16 * MiB);
	pass(&a, 0);
	a.s.next_pass_ns = 100 * SEC;		/* backed off, idle */
	service_hurry(&a.s, 10 * SEC);
	assert_int_equal(a.s.next_pass_ns, SEC);	/* due: a second after the last */
	pass(&a, 10 * SEC);
	service_hurry(&a.s, 10 * SEC + SEC / 5);
	assert_int_equal(a.s.next_pass_ns, 11 * SEC);	/* not before the pace allows */
	real_stop(&a);
}

/* A guest that detached offers nothing: it would give nothing back. */
static void test_detached_guest_offers_nothing(void **state)
{
	uint64_t frames[SHARE_AGES], ages[SHARE_AGES];
	struct real a;

	(void)state;
	real_start(&a, "detached", 16 * MiB);
	pass(&a, 0);
	mark_volatile(&a, 100, 50);
	pass(&a, SEC);
	assert_int_equal(service_volatile_ages(&a.s, 2 * SEC, frames, ages), 50);
	a.s.t.hdr->guest_epoch = 0;
	assert_int_equal(service_volatile_ages(&a.s, 2 * SEC, frames, ages), 0);
	real_stop(&a);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_share.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_within_budget_asks_nothing),
		cmocka_unit_test(test_oldest_first_across_guests),
		cmocka_unit_test(test_weight_scales_age),
		cmocka_unit_test(test_floor_is_respected),
		cmocka_unit_test(test_shortfall_in_proportion),
		cmocka_unit_test(test_unmet_when_all_at_floor),
		cmocka_unit_test(test_budget_changes),
		cmocka_unit_test(test_random_mixes),
		cmocka_unit_test(test_real_guests_oldest_go_first),
		cmocka_unit_test(test_pace_does_not_age),
		cmocka_unit_test(test_hurry_keeps_the_pace),
		cmocka_unit_test(test_detached_guest_offers_nothing),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
