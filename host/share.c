// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>

#include "share.h"

#define FRAME	4096ULL

/* The volatile frames of one guest that are one age, in the order all go. */
struct slice {
	uint64_t scaled_age;	/* its age, scaled by its guest's weight */
	uint64_t frames;
	size_t guest;
};

static unsigned int weight_of(const struct share_guest *g)
{
	if (!g->weight)
		return SHARE_DEFAULT_WEIGHT;
	return g->weight > SHARE_MAX_WEIGHT ? SHARE_MAX_WEIGHT : g->weight;
}

/* @age_ns as a guest of weight @w sees it; ages of centuries saturate. */
static uint64_t scaled_age(uint64_t age_ns, unsigned int w)
{
	if (age_ns > UINT64_MAX / SHARE_DEFAULT_WEIGHT)
		age_ns = UINT64_MAX / SHARE_DEFAULT_WEIGHT;
	return age_ns * SHARE_DEFAULT_WEIGHT / w;
}

/* The oldest first; between equals, the guests in their order (see take_equals()). */
static int older_first(const void *a, const void *b)
{
	const struct slice *x = a, *y = b;

	if (x->scaled_age != y->scaled_age)
		return x->scaled_age < y->scaled_age ? 1 : -1;
	return (x->guest > y->guest) - (x->guest < y->guest);
}

static uint64_t min3(uint64_t a, uint64_t b, uint64_t c)
{
	return a < b ? (a < c ? a : c) : (b < c ? b : c);
}

static void ask(struct share_guest *g, uint64_t *room, uint64_t frames, uint64_t *need)
{
	g->asked += frames;
	*room -= frames;
	*need -= frames;
}

/*
 * @nr slices of one (scaled) age, of different guests: all of them when
 * they are no more than what is needed; else each gives in proportion to
 * what it can give, so that guests whose frames are as old give alike
 * (never the first in the list all of it), and what rounding leaves, a
 * frame each in turn.
 */
static void take_equals(struct share_guest *g, struct slice *s, size_t nr, uint64_t *room,
			uint64_t *need)
{
	uint64_t total = 0, round = *need, take;
	size_t i;

	for (i = 0; i < nr; i++) {
		if (s[i].frames > room[s[i].guest])
			s[i].frames = room[s[i].guest];
		total += s[i].frames;
	}
	for (i = 0; i < nr && *need; i++) {
		take = total <= round ? s[i].frames :
		       (uint64_t)((unsigned __int128)round * s[i].frames / total);
		take = min3(take, s[i].frames, *need);
		ask(&g[s[i].guest], &room[s[i].guest], take, need);
		s[i].frames -= take;
	}
	for (i = 0; i < nr && *need; i++)
		if (s[i].frames) {
			ask(&g[s[i].guest], &room[s[i].guest], 1, need);
			s[i].frames--;
		}
}

/* Step 1: the known volatile frames, the oldest of all guests first. */
static int ask_volatile(struct share_guest *g, size_t n, uint64_t *room, uint64_t *need)
{
	struct slice *s;
	size_t i, a, end, nr = 0;

	for (i = 0; i < n; i++)
		for (a = 0; g[i].volatile_ && a < SHARE_AGES; a++)
			nr += g[i].volatile_[a] && room[i];
	if (!nr)
		return 0;
	s = malloc(nr * sizeof(*s));
	if (!s)
		return -1;
	nr = 0;
	for (i = 0; i < n; i++)
		for (a = 0; g[i].volatile_ && a < SHARE_AGES; a++)
			if (g[i].volatile_[a] && room[i])
				s[nr++] = (struct slice){
					.scaled_age = scaled_age(g[i].age_ns[a], weight_of(&g[i])),
					.frames = g[i].volatile_[a],
					.guest = i,
				};
	qsort(s, nr, sizeof(*s), older_first);
	for (i = 0; i < nr && *need; i = end) {
		for (end = i + 1; end < nr && s[end].scaled_age == s[i].scaled_age; end++)
			;
		take_equals(g, s + i, end - i, room, need);
	}
	free(s);
	return 0;
}

/*
 * Step 2: what is still missing, from every guest with room above its
 * floor, in proportion to that room divided by its weight.  A share is at
 * most the guest's room: what a guest at its floor cannot take goes to the
 * others, in rounds, and what rounding leaves, a frame each in turn.
 */
static void ask_the_rest(struct share_guest *g, size_t n, uint64_t *room, uint64_t *need)
{
	while (*need) {
		unsigned __int128 sum = 0;
		uint64_t given = 0, round = *need;
		size_t i;

		for (i = 0; i < n; i++)
			if (room[i])
				sum += (unsigned __int128)room[i] * SHARE_DEFAULT_WEIGHT /
				       weight_of(&g[i]) + 1;
		if (!sum)
			return;
		for (i = 0; i < n; i++) {
			uint64_t part;

			if (!room[i])
				continue;
			part = (unsigned __int128)round *
			       ((unsigned __int128)room[i] * SHARE_DEFAULT_WEIGHT /
				weight_of(&g[i]) + 1) / sum;
			if (part > room[i])
				part = room[i];
			g[i].shortfall += part;
			ask(&g[i], &room[i], part, need);
			given += part;
		}
		for (i = 0; !given && i < n && *need; i++)
			if (room[i]) {
				g[i].shortfall++;
				ask(&g[i], &room[i], 1, need);
			}
	}
}

int share_budget(struct share_guest *g, size_t n, uint64_t budget, struct share_total *total)
{
	uint64_t *room, need;
	size_t i;

	total->held = 0;
	for (i = 0; i < n; i++) {
		g[i].target = GIVEBACK_NO_TARGET;
		g[i].asked = 0;
		g[i].shortfall = 0;
		total->held += g[i].held;
	}
	total->over = total->held > budget ? (total->held - budget + FRAME - 1) / FRAME : 0;
	total->unmet = 0;
	if (!total->over)
		return 0;

	room = calloc(n ? n : 1, sizeof(*room));
	if (!room) {
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < n; i++)
		room[i] = g[i].held > g[i].floor ? (g[i].held - g[i].floor) / FRAME : 0;
	need = total->over;
	if (ask_volatile(g, n, room, &need)) {
		for (i = 0; i < n; i++)
			g[i].asked = 0;
		free(room);
		errno = ENOMEM;
		return -1;
	}
	ask_the_rest(g, n, room, &need);
	total->unmet = need;
	for (i = 0; i < n; i++)
		if (g[i].asked)
			g[i].target = g[i].held - g[i].asked * FRAME;
	free(room);
	return 0;
}
