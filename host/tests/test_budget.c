// SPDX-License-Identifier: GPL-2.0
/*
 * Budgets and pace, against a clock of the test's own (no sleeps): the
 * token buckets, the backoff of passes that find nothing, and two guests
 * on real table and RAM files, one of them hostile (it names every chunk
 * of its change summary before each pass and writes junk into its states),
 * the other served as it is when alone.  Everything is counted, nothing
 * timed: the same checks pass on a fast machine and on a slow one.
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

#include "../budget.h"
#include "../service.h"

#define MiB	(1ULL << 20)
#define MS	NSEC_PER_MSEC

static const volatile sig_atomic_t not_stopping;

static void test_bucket_refills_at_its_rate(void **state)
{
	struct bucket b;
	uint64_t t = 5 * NSEC_PER_SEC;

	(void)state;
	bucket_init(&b, 100, 100, t);
	assert_int_equal(bucket_tokens(&b), 100);	/* full at the start */
	bucket_spend(&b, 250);				/* no more than it holds */
	assert_int_equal(bucket_tokens(&b), 0);
	bucket_refill(&b, t += 10 * MS);
	assert_int_equal(bucket_tokens(&b), 1);
	/* half a token's time twice: the halves add up */
	bucket_refill(&b, t += 5 * MS);
	assert_int_equal(bucket_tokens(&b), 1);
	bucket_refill(&b, t += 5 * MS);
	assert_int_equal(bucket_tokens(&b), 2);
	/* a clock that goes back earns nothing */
	bucket_refill(&b, t - NSEC_PER_SEC);
	assert_int_equal(bucket_tokens(&b), 2);
	/* never more than the burst, however long it waited */
	bucket_refill(&b, t += 3600 * NSEC_PER_SEC);
	assert_int_equal(bucket_tokens(&b), 100);
	/* a rate of 0 is no limit */
	bucket_init(&b, 0, 0, t);
	bucket_spend(&b, 1000);
	assert_int_equal(bucket_tokens(&b), UINT64_MAX);
}

static void test_bucket_large_rate_no_overflow(void **state)
{
	struct bucket b;

	(void)state;
	bucket_init(&b, 1000000000, 4000000000ULL, 0);
	bucket_spend(&b, 4000000000ULL);
	bucket_refill(&b, 3 * NSEC_PER_SEC + 1);
	assert_int_equal(bucket_tokens(&b), 3000000001ULL);
	/* 20 s at 1e9 a second: rate times nanoseconds would wrap past 2^64 */
	bucket_spend(&b, 4000000000ULL);
	bucket_refill(&b, 23 * NSEC_PER_SEC + 1);
	assert_int_equal(bucket_tokens(&b), 4000000000ULL);
}

static void test_bucket_wait(void **state)
{
	struct bucket b;

	(void)state;
	bucket_init(&b, 100, 10, 0);
	assert_int_equal(bucket_wait_ns(&b, 1, 0), 0);
	bucket_spend(&b, 10);
	assert_int_equal(bucket_wait_ns(&b, 1, 0), 10 * MS);
	assert_int_equal(bucket_wait_ns(&b, 1, 4 * MS), 6 * MS);
	assert_int_equal(bucket_wait_ns(&b, 1, 10 * MS), 0);
	/* more than the burst: the burst, never forever */
	assert_int_equal(bucket_wait_ns(&b, 1000, 0), 100 * MS);
}

static void test_backoff(void **state)
{
	struct backoff b;

	(void)state;
	backoff_init(&b, 10 * MS, 160 * MS);
	assert_int_equal(backoff_next(&b, false), 20 * MS);
	assert_int_equal(backoff_next(&b, false), 40 * MS);
	assert_int_equal(backoff_next(&b, false), 80 * MS);
	assert_int_equal(backoff_next(&b, false), 160 * MS);
	assert_int_equal(backoff_next(&b, false), 160 * MS);
	assert_int_equal(backoff_next(&b, true), 10 * MS);
	backoff_init(&b, MS, MS);	/* --chaos: no backoff */
	assert_int_equal(backoff_next(&b, false), MS);
}

/* A guest's files, made by init, and the guest attached. */
struct guest {
	char table[96], ram[96];
	struct service s;
	uint64_t given_back, reads, passes;
};

static char dir[64];

static const struct service_limits limits = {
	.reads_s = 1000, .punches_s = 20000, .frames_s = 0, .burst_div = 10,
	.min_pass_ns = 10 * MS, .max_pass_ns = 160 * MS,
};

static void guest_start(struct guest *g, const char *name, uint64_t ram_bytes)
{
	char err[256];
	struct table t;

	snprintf(g->table, sizeof(g->table), "%s/%s.table", dir, name);
	snprintf(g->ram, sizeof(g->ram), "%s/%s.ram", dir, name);
	if (table_create(g->table, g->ram, ram_bytes, true, err, sizeof(err)) ||
	    table_open(&t, g->table, g->ram, err, sizeof(err)))
		fail_msg("%s: %s", name, err);
	assert_int_equal(ftruncate(t.ram_fd, 0), 0);	/* a guest that wrote everything */
	assert_int_equal(ftruncate(t.ram_fd, ram_bytes), 0);
	assert_int_equal(fallocate(t.ram_fd, 0, 0, ram_bytes > 64 * MiB ? 64 * MiB : ram_bytes), 0);
	t.hdr->guest_epoch = t.hdr->host_epoch;
	assert_int_equal(service_init(&g->s, &t, false, 0, &limits, 0), 0);
	g->given_back = 0;
	g->reads = 0;
	g->passes = 0;
}

static void guest_stop(struct guest *g)
{
	service_free(&g->s);
	unlink(g->table);
	unlink(g->ram);
}

/* Frames @first.. (@n of them, every @step-th) become unused, as the guest marks them. */
static void mark_unused(struct guest *g, uint64_t first, uint64_t n, uint64_t step)
{
	struct table *t = &g->s.t;
	uint64_t i, pfn, c;

	for (i = 0; i < n; i++) {
		pfn = first + i * step;
		__atomic_store_n(&t->states[pfn], PAGEHINT_UNUSED, __ATOMIC_RELEASE);
		c = pfn / PAGEHINT_CHUNK_FRAMES;
		__atomic_fetch_or(&t->summary[c / 64], htole64(1ULL << (c % 64)), __ATOMIC_SEQ_CST);
	}
}

/*
 * The hostile guest before each of its passes: every chunk of its summary
 * named, and junk (bytes the protocol never writes, stable ones, states
 * flipped) over its states.
 */
static void be_hostile(struct guest *g, uint64_t *x)
{
	struct table *t = &g->s.t;
	uint64_t w, i;

	for (w = 0; w < (t->nr_chunks + 63) / 64; w++)
		__atomic_store_n(&t->summary[w], ~0ULL, __ATOMIC_SEQ_CST);
	for (i = 0; i < 4096; i++) {
		*x ^= *x << 13;
		*x ^= *x >> 7;
		*x ^= *x << 17;
		t->states[*x % t->nr_frames] = (uint8_t)(*x >> 32) | 0x40;
	}
}

/*
 * Serve @n guests from @from_ns to @until_ns, each pass when it is due,
 * as host mode's loop does; guest @hostile (-1: none) plays up first.
 */
static void serve(struct guest **g, int n, int hostile, uint64_t from_ns, uint64_t until_ns)
{
	uint64_t x = 88172645463325252ULL, now;
	struct giveback_pass done;
	int i;

	for (;;) {
		now = UINT64_MAX;
		for (i = 0; i < n; i++)
			if (g[i]->s.next_pass_ns < now)
				now = g[i]->s.next_pass_ns;
		if (now < from_ns)
			now = from_ns;
		if (now > until_ns)
			return;
		for (i = 0; i < n; i++) {
			if (!service_due(&g[i]->s, now))
				continue;
			if (i == hostile)
				be_hostile(g[i], &x);
			assert_int_equal(service_pass(&g[i]->s, now, &not_stopping, &done), 0);
			g[i]->given_back += done.unused + done.volatile_;
			g[i]->reads += done.chunks_read;
			g[i]->passes++;
		}
	}
}

/* An idle guest is looked at less and less often; work brings the pace back. */
static void test_idle_guest_backs_off(void **state)
{
	struct guest g, *gs[] = { &g };
	uint64_t before;

	(void)state;
	guest_start(&g, "idle", 64 * MiB);
	/* the first pass reads everything (a guest that attached), then nothing is left */
	serve(gs, 1, -1, 0, 0);
	assert_int_equal(g.reads, g.s.t.nr_chunks);
	serve(gs, 1, -1, 1, 10 * NSEC_PER_SEC);
	/* 10, 20, 40, 80, 160 ms, then every 160 ms: 65 passes in 10 s, not 1000 */
	if (g.passes > 1 + 4 + 10 * 1000 / 160 + 1)
		fail_msg("an idle guest got %llu passes in 10 s", (unsigned long long)g.passes);
	assert_int_equal(g.s.pace.wait_ns, 160 * MS);
	/* the guest frees 64 frames: given back at the next pass, and the pace is back */
	mark_unused(&g, 100, 64, 1);
	before = g.passes;
	assert_true(g.s.next_pass_ns <= 10 * NSEC_PER_SEC + 160 * MS);
	serve(gs, 1, -1, 10 * NSEC_PER_SEC, g.s.next_pass_ns);	/* the next pass alone */
	assert_int_equal(g.passes, before + 1);
	assert_int_equal(g.given_back, 64);
	assert_int_equal(g.s.pace.wait_ns, 10 * MS);
	guest_stop(&g);
}

/*
 * Two guests: B frees frames in every chunk at 0 s and again at 5 s; A
 * names all its chunks and writes junk before every pass it gets.  A reads
 * no more chunks than its budget lets it, and B is served exactly as it is
 * alone: the same frames given back in the same passes.
 */
static void test_hostile_guest_spends_only_its_budget(void **state)
{
	struct guest a, b, alone, *both[] = { &a, &b }, *one[] = { &alone };
	uint64_t max_reads, alone_after_0, b_after_0;

	(void)state;
	guest_start(&a, "hostile", 1024 * MiB);		/* 512 chunks */
	guest_start(&b, "benign", 64 * MiB);		/* 32 chunks */
	guest_start(&alone, "alone", 64 * MiB);
	mark_unused(&b, 0, 256, 64);		/* 8 frames in each of the 32 chunks */
	mark_unused(&alone, 0, 256, 64);

	serve(both, 2, 0, 0, 5 * NSEC_PER_SEC - 1);
	serve(one, 1, -1, 0, 5 * NSEC_PER_SEC - 1);
	b_after_0 = b.passes;
	alone_after_0 = alone.passes;
	mark_unused(&b, 1, 256, 64);
	mark_unused(&alone, 1, 256, 64);
	serve(both, 2, 0, 5 * NSEC_PER_SEC, 10 * NSEC_PER_SEC);
	serve(one, 1, -1, 5 * NSEC_PER_SEC, 10 * NSEC_PER_SEC);

	/* a full burst at the start, then its rate: 10 s at 1000 chunks a second */
	max_reads = limits.reads_s / limits.burst_div + 10 * limits.reads_s;
	print_message("hostile: %llu chunks read in %llu passes (budget %llu); benign: %llu frames back in %llu passes, alone %llu in %llu\n",
		      (unsigned long long)a.reads, (unsigned long long)a.passes,
		      (unsigned long long)max_reads, (unsigned long long)b.given_back,
		      (unsigned long long)b.passes, (unsigned long long)alone.given_back,
		      (unsigned long long)alone.passes);
	if (a.reads > max_reads)
		fail_msg("the hostile guest had %llu chunks read in 10 s, over its budget of %llu",
			 (unsigned long long)a.reads, (unsigned long long)max_reads);
	/* it did ask for more: every pass named all 512 chunks */
	assert_true(a.s.starved > 0);
	if (b.given_back != 512 || b.given_back != alone.given_back ||
	    b.passes != alone.passes || b_after_0 != alone_after_0)
		fail_msg("the benign guest got %llu frames back in %llu passes (%llu before 5 s) beside the hostile one, %llu in %llu (%llu) alone",
			 (unsigned long long)b.given_back, (unsigned long long)b.passes,
			 (unsigned long long)b_after_0, (unsigned long long)alone.given_back,
			 (unsigned long long)alone.passes, (unsigned long long)alone_after_0);
	guest_stop(&a);
	guest_stop(&b);
	guest_stop(&alone);
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/pagehint-budget-XXXXXX");
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
		cmocka_unit_test(test_bucket_refills_at_its_rate),
		cmocka_unit_test(test_bucket_large_rate_no_overflow),
		cmocka_unit_test(test_bucket_wait),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_idle_guest_backs_off),
		cmocka_unit_test(test_hostile_guest_spends_only_its_budget),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
