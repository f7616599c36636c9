// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "giveback.h"

#define MAX_RUN		PAGEHINT_CHUNK_FRAMES	/* frames per punch: 2 MiB */
/*
 * The aged policy stamps frames with a 16-bit pass number.  Every this many
 * passes, stamps older than GIVEBACK_MAX_PASSES are brought forward to that
 * age, so that no age ever wraps.
 */
#define STAMP_CLAMP	(1U << 15)
#define NOT_READ	0xff		/* a state no frame's age counts from */
#define MSEC_NS		1000000ULL	/* nanoseconds in a millisecond */

static uint64_t map_words(uint64_t nr_chunks)
{
	return (nr_chunks + 63) / 64;
}

static bool chunk_test(const uint64_t *map, uint64_t c)
{
	return map[c / 64] >> (c % 64) & 1;
}

static void chunk_assign(uint64_t *map, uint64_t c, bool on)
{
	if (on)
		map[c / 64] |= 1ULL << (c % 64);
	else
		map[c / 64] &= ~(1ULL << (c % 64));
}

int giveback_init(struct giveback *g, const struct table *t, bool aged, unsigned int min_unused)
{
	uint64_t words = map_words(t->nr_chunks), frames = t->nr_frames ? t->nr_frames : 1;

	memset(g, 0, sizeof(*g));
	g->nr_chunks = t->nr_chunks;
	g->changed = calloc(words ? words : 1, sizeof(uint64_t));
	g->unused_left = calloc(words ? words : 1, sizeof(uint64_t));
	g->volatile_left = calloc(words ? words : 1, sizeof(uint64_t));
	g->volatile_count = calloc(t->nr_chunks ? t->nr_chunks : 1, sizeof(*g->volatile_count));
	g->volatile_since = calloc(t->nr_chunks ? t->nr_chunks : 1, sizeof(*g->volatile_since));
	if (aged) {
		g->state = malloc(frames);
		g->since = calloc(frames, sizeof(*g->since));
		g->last_read = calloc(t->nr_chunks ? t->nr_chunks : 1, sizeof(*g->last_read));
		if (g->state)
			memset(g->state, NOT_READ, frames);
	}
	g->min_unused = min_unused > GIVEBACK_MAX_PASSES ? GIVEBACK_MAX_PASSES : min_unused;
	if (!g->changed || !g->unused_left || !g->volatile_left || !g->volatile_count ||
	    !g->volatile_since || (aged && (!g->state || !g->since || !g->last_read))) {
		giveback_free(g);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

void giveback_free(struct giveback *g)
{
	free(g->changed);
	free(g->unused_left);
	free(g->volatile_left);
	free(g->state);
	free(g->since);
	free(g->last_read);
	free(g->volatile_count);
	free(g->volatile_since);
	memset(g, 0, sizeof(*g));
}

/* How many passes frame @p has been in its state, up to GIVEBACK_MAX_PASSES. */
static unsigned int frame_age(const struct giveback *g, uint64_t p)
{
	uint16_t age = g->pass - g->since[p];

	return age > GIVEBACK_MAX_PASSES ? GIVEBACK_MAX_PASSES : age;
}

static void clamp_stamps(struct giveback *g, uint64_t nr_frames)
{
	uint64_t p;

	for (p = 0; p < nr_frames; p++)
		if (frame_age(g, p) == GIVEBACK_MAX_PASSES)
			g->since[p] = g->pass - GIVEBACK_MAX_PASSES;
	/* long unread stays long unread, never "read in the last pass" */
	for (p = 0; p < g->nr_chunks; p++)
		if ((uint16_t)(g->pass - g->last_read[p]) > GIVEBACK_MAX_PASSES)
			g->last_read[p] = g->pass - GIVEBACK_MAX_PASSES;
}

/*
 * The frames of chunk @c that are guest RAM, as [*first, *end) in range
 * @r; false when range @r has none.  A chunk is 2 MiB aligned, like the
 * q35 ranges, but the code does not count on it.
 */
static bool chunk_span(const struct table *t, uint64_t c, unsigned int r, uint64_t *first,
		       uint64_t *end)
{
	uint64_t lo = c << PAGEHINT_CHUNK_SHIFT, hi = lo + PAGEHINT_CHUNK_FRAMES;
	uint64_t rlo = t->ranges[r].first_pfn, rhi = rlo + t->ranges[r].nr_frames;

	*first = lo > rlo ? lo : rlo;
	*end = hi < rhi ? hi : rhi;
	return *first < *end;
}

/*
 * One read of each frame of chunk @c: note which states it holds, and
 * with the aged policy, how long each frame has held its state.
 */
static void read_chunk(const struct table *t, struct giveback *g, uint64_t c, bool named,
		       uint64_t volatile_by_age[GIVEBACK_MAX_PASSES + 1])
{
	bool unused = false, restamp = false;
	unsigned int r, nr_volatile = 0;
	uint64_t p, end;

	/*
	 * A chunk the summary names that was not read in the last pass may
	 * have had any frame taken back and given up again meanwhile, for
	 * all we know: its unused and volatile frames start their ages now.
	 * One the summary does not name had no frame become unused or
	 * volatile since it was read, so the ages of those that still are
	 * hold.
	 */
	if (g->state) {
		restamp = named && g->last_read[c] != (uint16_t)(g->pass - 1);
		g->last_read[c] = g->pass;
	}

	for (r = 0; r < t->nr_ranges; r++) {
		if (!chunk_span(t, c, r, &p, &end))
			continue;
		for (; p < end; p++) {
			uint8_t s = table_state(t, p);

			unused |= s == PAGEHINT_UNUSED;
			nr_volatile += s == PAGEHINT_VOLATILE;
			if (!g->state)
				continue;
			if (s != g->state[p] ||
			    (restamp && (s == PAGEHINT_UNUSED || s == PAGEHINT_VOLATILE))) {
				g->state[p] = s;
				g->since[p] = g->pass;
			}
			if (s == PAGEHINT_VOLATILE)
				volatile_by_age[frame_age(g, p)]++;
		}
	}
	chunk_assign(g->unused_left, c, unused);
	chunk_assign(g->volatile_left, c, nr_volatile);
	if (nr_volatile && (!g->volatile_count[c] || named))
		g->volatile_since[c] = g->clock_ns;
	g->volatile_count[c] = nr_volatile;
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

/* Frame @p may go now: in state @want and, aged, at least @min_age old. */
static bool candidate(const struct table *t, const struct giveback *g, uint8_t want,
		      uint64_t p, unsigned int min_age)
{
	if (table_state(t, p) != want)
		return false;
	return !g->state || (g->state[p] == want && frame_age(g, p) >= min_age);
}

/* What one pass may still spend, and what it gave back. */
struct spend {
	uint64_t budget, calls_end;
	long long target_bytes;
	const volatile sig_atomic_t *stop;
	uint64_t *total;
};

static bool may_spend(const struct table *t, const struct spend *s, uint64_t done)
{
	return done < s->budget && t->host.punch_calls < s->calls_end && !*s->stop &&
	       table_attached(t);
}

/*
 * Give back the frames of chunk @c that are @want and @min_age old, while
 * above the target and within the budget; *@done counts the frames given
 * back by the whole pass.
 */
static int drop_chunk(struct table *t, struct giveback *g, uint64_t c, uint8_t want,
		      unsigned int min_age, const struct spend *s, uint64_t *done)
{
	uint64_t p, end, len, over;
	unsigned int r;
	int64_t n;

	for (r = 0; r < t->nr_ranges; r++) {
		if (!chunk_span(t, c, r, &p, &end))
			continue;
		for (; p < end; p += len) {
			if (!candidate(t, g, want, p, min_age)) {
				len = 1;
				continue;
			}
			for (len = 1; p + len < end && len < MAX_RUN &&
			     candidate(t, g, want, p + len, min_age); len++)
				;
			if (!may_spend(t, s, *done) || !(over = over_target(t, s->target_bytes)))
				return 0;
			if (len > s->budget - *done)
				len = s->budget - *done;
			if (len > over)
				len = over;
			n = table_drop_run(t, want, p, len);
			if (n < 0)
				return -1;
			*done += n;
			*s->total += n;
			if (want == PAGEHINT_VOLATILE)
				g->volatile_count[c] -= n < g->volatile_count[c] ?
							n : g->volatile_count[c];
		}
	}
	return 0;
}

/* Every chunk of @map, in order, while the pass may spend. */
static int drop_chunks(struct table *t, struct giveback *g, const uint64_t *map,
		       uint8_t want, unsigned int min_age, const struct spend *s, uint64_t *done)
{
	uint64_t c;

	for (c = 0; c < g->nr_chunks; c++) {
		if (!(map[c / 64] >> (c % 64))) {
			c |= 63;	/* the rest of this word is clear */
			continue;
		}
		if (!chunk_test(map, c))
			continue;
		if (!may_spend(t, s, *done))
			break;
		if (drop_chunk(t, g, c, want, min_age, s, done))
			return -1;
	}
	return 0;
}

/*
 * A guest that attached since the last pass (a new boot, the device bound
 * again, or this daemon new) may have changed any frame while the host
 * looked away, and its states have nothing to do with the ages kept:
 * read every chunk, from scratch.
 */
static void guest_attached(const struct table *t, struct giveback *g)
{
	uint64_t w, words = map_words(g->nr_chunks);

	memset(g->volatile_count, 0, g->nr_chunks * sizeof(*g->volatile_count));

	for (w = 0; w < words; w++)
		g->changed[w] = ~0ULL;
	if (g->nr_chunks % 64)
		g->changed[words - 1] = (1ULL << (g->nr_chunks % 64)) - 1;
	if (g->state)
		memset(g->state, NOT_READ, t->nr_frames);
}

int giveback_pass(struct table *t, struct giveback *g, uint64_t budget, uint64_t call_budget,
		  long long target_bytes, const volatile sig_atomic_t *stop,
		  struct giveback_pass *done)
{
	struct giveback_budget b = { .frames = budget, .calls = call_budget, .reads = UINT64_MAX };

	return giveback_pass_within(t, g, &b, target_bytes, stop, done);
}

/*
 * Read the chunks the pass must look at, at most @reads of them, starting
 * at the chunk where the last pass that ran out stopped: a guest that
 * names more chunks than its budget buys gets them all read in turn, none
 * twice before the rest.  A chunk the summary named and the pass did not
 * read stays named for the next.
 */
static void read_chunks(struct table *t, struct giveback *g, bool want_volatile, uint64_t reads,
			uint64_t volatile_by_age[GIVEBACK_MAX_PASSES + 1],
			struct giveback_pass *done)
{
	uint64_t n = g->nr_chunks, i, c, w, bits, rest;

	for (i = 0; i < n; i++) {
		c = g->read_cursor + i < n ? g->read_cursor + i : g->read_cursor + i - n;
		w = c / 64;
		bits = g->changed[w] | g->unused_left[w];
		if (want_volatile)
			bits |= g->volatile_left[w];
		if (!(bits >> (c % 64))) {
			/* nothing more in this word: on to the next, or to chunk 0 */
			rest = 63 - c % 64 < n - 1 - c ? 63 - c % 64 : n - 1 - c;
			i += rest;
			continue;
		}
		if (!(bits >> (c % 64) & 1))
			continue;
		if (done->chunks_read == reads) {
			g->read_cursor = c;
			return;
		}
		read_chunk(t, g, c, g->changed[w] >> (c % 64) & 1, volatile_by_age);
		g->changed[w] &= ~(1ULL << (c % 64));
		done->chunks_read++;
	}
}

int giveback_pass_within(struct table *t, struct giveback *g, const struct giveback_budget *b,
			 long long target_bytes, const volatile sig_atomic_t *stop,
			 struct giveback_pass *done)
{
	uint64_t budget = b->frames, call_budget = b->calls;
	uint64_t volatile_by_age[GIVEBACK_MAX_PASSES + 1] = { 0 };
	uint64_t calls = t->host.punch_calls, epoch, n = 0;
	struct spend s = {
		.budget = budget,
		.calls_end = call_budget > UINT64_MAX - calls ? UINT64_MAX : calls + call_budget,
		.stop = stop,
	};
	bool want_volatile;
	int ret;

	memset(done, 0, sizeof(*done));
	/* a guest that attaches again, in the same epoch or not, is read afresh */
	if (!table_attached(t)) {
		g->epoch = 0;
		return 0;
	}
	/* nothing to spend: not even the reads */
	if (!call_budget || !budget || !b->reads)
		return 0;
	/* only compared: a guest that flips it costs the host full reads, as before */
	epoch = __atomic_load_n(&t->hdr->guest_epoch, __ATOMIC_RELAXED);
	if (epoch != g->epoch) {
		g->epoch = epoch;
		guest_attached(t, g);
	}
	g->pass++;
	if (g->state && !(g->pass % STAMP_CLAMP))
		clamp_stamps(g, t->nr_frames);

	table_take_changed(t, g->changed);
	want_volatile = target_bytes != GIVEBACK_NO_TARGET && over_target(t, target_bytes);
	read_chunks(t, g, want_volatile, b->reads, volatile_by_age, done);

	/* unused frames cost the guest nothing: all of them go, target or not */
	s.total = &done->unused;
	s.target_bytes = GIVEBACK_NO_TARGET;
	ret = drop_chunks(t, g, g->unused_left, PAGEHINT_UNUSED, g->min_unused, &s, &n);
	s.target_bytes = target_bytes;
	if (!ret && want_volatile) {
		unsigned int min_volatile = 0;

		if (g->state)
			min_volatile = oldest_volatile(volatile_by_age,
						       over_target(t, target_bytes));
		s.total = &done->volatile_;
		ret = drop_chunks(t, g, g->volatile_left, PAGEHINT_VOLATILE, min_volatile, &s, &n);
	}
	done->punch_calls = t->host.punch_calls - calls;
	/* what is left to take: volatile frames are worth making only for it */
	table_set_host_wants(t, target_bytes == GIVEBACK_NO_TARGET ? 0 :
			     over_target(t, target_bytes));
	return ret;
}

/* The bin of an age: 8 a doubling of 1 + its milliseconds, the last one open. */
static unsigned int age_bin(uint64_t age_ns)
{
	uint64_t x = age_ns / MSEC_NS + 1;
	unsigned int l = 63 - __builtin_clzll(x), bin;

	bin = 8 * l + (unsigned int)((l >= 3 ? x >> (l - 3) : x << (3 - l)) & 7);
	return bin < GIVEBACK_AGE_BINS ? bin : GIVEBACK_AGE_BINS - 1;
}

/* The youngest age in bin @b. */
static uint64_t bin_age_ns(unsigned int b)
{
	unsigned int l = b / 8;
	uint64_t x = (8ULL + b % 8) << l >> 3;

	return (x ? x - 1 : 0) * MSEC_NS;
}

uint64_t giveback_volatile_ages(const struct giveback *g, uint64_t now_ns,
				uint64_t frames[GIVEBACK_AGE_BINS],
				uint64_t age_ns[GIVEBACK_AGE_BINS])
{
	uint64_t c, n = 0;
	unsigned int b;

	for (b = 0; b < GIVEBACK_AGE_BINS; b++) {
		frames[b] = 0;
		age_ns[b] = bin_age_ns(b);
	}
	for (c = 0; c < g->nr_chunks; c++)
		if (g->volatile_count[c]) {
			uint64_t since = g->volatile_since[c];

			frames[age_bin(now_ns > since ? now_ns - since : 0)] +=
				g->volatile_count[c];
			n += g->volatile_count[c];
		}
	return n;
}
