// SPDX-License-Identifier: GPL-2.0
/* pagehintd's metrics (metrics.h). */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metrics.h"

void metrics_snapshot(struct guest_metrics *m, const struct table *t, const char *name,
		      long long target_bytes)
{
	const struct pagehint_header *h = t->hdr;

	memset(m, 0, sizeof(*m));
	m->name = name;
	m->attached = table_attached(t);
	m->resident_bytes = ram_resident(t);
	table_count(t, &m->frames);
	m->dropped_unused = t->host.dropped_unused;
	m->dropped_volatile = t->host.dropped_volatile;
	m->punch_calls = t->host.punch_calls;
	m->claims_lost = t->host.cas_lost;
	m->target_bytes = target_bytes;
	m->guest_to_unused = le64toh(h->guest.to_unused);
	m->guest_to_stable = le64toh(h->guest.to_stable);
	m->guest_busy_waits = le64toh(h->guest.busy_waits);
	m->guest_frames_unused = le64toh(h->guest.frames_unused);
}

/* A label value: backslash, double quote and newline escaped, as the format says. */
static void label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/*
 * One sample: NAME{guest="...",uuid="...",EXTRA} VALUE, uuid only for a
 * guest that has one, EXTRA a label pair or NULL.
 */
static void sample(FILE *f, const char *metric, const struct guest_metrics *g,
		   const char *extra, uint64_t value)
{
	fprintf(f, "%s{guest=\"", metric);
	label_value(f, g->name);
	if (g->uuid) {
		fputs("\",uuid=\"", f);
		label_value(f, g->uuid);
	}
	fprintf(f, "\"%s%s} %" PRIu64 "\n", extra ? "," : "", extra ? extra : "", value);
}

static void family(FILE *f, const char *metric, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", metric, help, metric, type);
}

int metrics_format(FILE *f, const struct guest_metrics *g, size_t n)
{
	size_t i;

	family(f, "pagehint_guest_attached", "gauge",
	       "Whether the guest is attached to the current table epoch (1) or not (0).");
	for (i = 0; i < n; i++)
		sample(f, "pagehint_guest_attached", &g[i], NULL, g[i].attached);
	family(f, "pagehint_host_resident_bytes", "gauge",
	       "Host memory behind the guest's RAM file: its allocated blocks.");
	for (i = 0; i < n; i++)
		sample(f, "pagehint_host_resident_bytes", &g[i], NULL, g[i].resident_bytes);
	family(f, "pagehint_frames", "gauge",
	       "The guest's 4 KiB frames per state in the table; *_dropped: given back.");
	for (i = 0; i < n; i++) {
		const struct table_counts *c = &g[i].frames;

		sample(f, "pagehint_frames", &g[i], "state=\"stable\"", c->stable);
		sample(f, "pagehint_frames", &g[i], "state=\"unused\"", c->unused);
		sample(f, "pagehint_frames", &g[i], "state=\"unused_dropped\"", c->unused_dropped);
		sample(f, "pagehint_frames", &g[i], "state=\"volatile\"", c->volatile_);
		sample(f, "pagehint_frames", &g[i], "state=\"volatile_dropped\"",
		       c->volatile_dropped);
		sample(f, "pagehint_frames", &g[i], "state=\"busy\"", c->busy);
	}
	family(f, "pagehint_dropped_frames_total", "counter",
	       "Frames this pagehintd gave back to the host, by the state they were in.");
	for (i = 0; i < n; i++) {
		sample(f, "pagehint_dropped_frames_total", &g[i], "state=\"unused\"",
		       g[i].dropped_unused);
		sample(f, "pagehint_dropped_frames_total", &g[i], "state=\"volatile\"",
		       g[i].dropped_volatile);
	}
	family(f, "pagehint_punch_calls_total", "counter",
	       "fallocate(PUNCH_HOLE) calls this pagehintd made.");
	for (i = 0; i < n; i++)
		sample(f, "pagehint_punch_calls_total", &g[i], NULL, g[i].punch_calls);
	family(f, "pagehint_claims_lost_total", "counter",
	       "Frames the guest took back between this pagehintd's look and its claim.");
	for (i = 0; i < n; i++)
		sample(f, "pagehint_claims_lost_total", &g[i], NULL, g[i].claims_lost);
	family(f, "pagehint_target_bytes", "gauge",
	       "How much of the guest the host would hold at most; absent: no target.");
	for (i = 0; i < n; i++)
		if (g[i].target_bytes >= 0)
			sample(f, "pagehint_target_bytes", &g[i], NULL, g[i].target_bytes);
	family(f, "pagehint_budget_asked_bytes", "gauge",
	       "What the host budget asks the guest to give back; absent: no budget.");
	for (i = 0; i < n; i++)
		if (g[i].budgeted)
			sample(f, "pagehint_budget_asked_bytes", &g[i], NULL,
			       g[i].budget_asked_bytes);
	family(f, "pagehint_budget_shortfall_bytes", "gauge",
	       "Of it, what the guest had no volatile frames for: its scanner is asked for more.");
	for (i = 0; i < n; i++)
		if (g[i].budgeted)
			sample(f, "pagehint_budget_shortfall_bytes", &g[i], NULL,
			       g[i].budget_shortfall_bytes);
	family(f, "pagehint_guest_transitions_total", "counter",
	       "Frame state changes the guest counted, as it wrote them in the table.");
	for (i = 0; i < n; i++) {
		sample(f, "pagehint_guest_transitions_total", &g[i], "to=\"unused\"",
		       g[i].guest_to_unused);
		sample(f, "pagehint_guest_transitions_total", &g[i], "to=\"stable\"",
		       g[i].guest_to_stable);
	}
	family(f, "pagehint_guest_busy_waits_total", "counter",
	       "Waits for a frame the host held, as the guest counted them in the table.");
	for (i = 0; i < n; i++)
		sample(f, "pagehint_guest_busy_waits_total", &g[i], NULL, g[i].guest_busy_waits);
	family(f, "pagehint_guest_unused_frames", "gauge",
	       "Frames the guest says are unused, as it wrote it in the table.");
	for (i = 0; i < n; i++)
		sample(f, "pagehint_guest_unused_frames", &g[i], NULL, g[i].guest_frames_unused);
	return ferror(f) ? -1 : 0;
}

int metrics_write(const char *path, const struct guest_metrics *g, size_t n)
{
	/* not *.prom: node_exporter must not read the half-written file */
	size_t len = strlen(path);
	char *tmp = malloc(len + 8);
	FILE *f = NULL;
	int fd, e;

	if (!tmp)
		return -1;
	memcpy(tmp, path, len);
	memcpy(tmp + len, ".XXXXXX", 8);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		goto fail;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		goto fail_unlink;
	}
	if (fchmod(fd, 0644) || metrics_format(f, g, n) || fflush(f) || rename(tmp, path))
		goto fail_unlink;
	fclose(f);
	free(tmp);
	return 0;

fail_unlink:
	e = errno;
	unlink(tmp);
	if (f)
		fclose(f);
	errno = e;
fail:
	e = errno;
	free(tmp);
	errno = e;
	return -1;
}
