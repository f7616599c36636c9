/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pagehintd's metrics, in the Prometheus text format, for node_exporter's
 * textfile collector (--metrics-file): per guest, what the host holds of
 * it, its frames per state, what the daemon gave back, the target, and
 * the counters the guest keeps in the table's header.
 *
 * A daemon that serves several guests writes one file with a snapshot of
 * each; the guest label names a guest as the host knows it (the operator's
 * --name, or its table's path), never as the guest says.
 */
#ifndef PAGEHINT_METRICS_H
#define PAGEHINT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "table.h"

struct guest_metrics {
	const char *name;		/* the guest label */
	const char *uuid;		/* the uuid label (a libvirt domain's); NULL: none */
	bool attached;
	uint64_t resident_bytes;	/* the RAM file's allocated blocks */
	struct table_counts frames;	/* per state, read from the table */
	/* this daemon's own, since it started */
	uint64_t dropped_unused, dropped_volatile, punch_calls, claims_lost;
	long long target_bytes;		/* < 0: no target */
	/* under a host budget only (share.h): what it asks of the guest */
	bool budgeted;
	uint64_t budget_asked_bytes, budget_shortfall_bytes;
	/* the guest's, as it wrote them in the header: any value at all */
	uint64_t guest_to_unused, guest_to_stable, guest_busy_waits, guest_frames_unused;
};

/* A snapshot of the guest of table @t, named @name, under target @target_bytes. */
void metrics_snapshot(struct guest_metrics *m, const struct table *t, const char *name,
		      long long target_bytes);

/* The text format for @n guests, to @f.  0, or -1 on a write error. */
int metrics_format(FILE *f, const struct guest_metrics *g, size_t n);

/*
 * Replace @path with the metrics of @n guests at once: a reader sees the
 * old file or the new one, never a part (a temporary file beside it,
 * renamed over it).  The file is 0644: node_exporter runs as its own
 * user.  0, or -1 with errno.
 */
int metrics_write(const char *path, const struct guest_metrics *g, size_t n);

#endif
