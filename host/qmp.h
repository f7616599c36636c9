/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Just enough of QEMU's machine protocol for pagehintd: connect, send a
 * command with an id, and read what QEMU sends (one JSON object a line):
 * events, and replies matched to the command they answer.
 *
 * Everything QEMU sends is parsed by json-c and matched field by field,
 * never as a substring: a string inside some other event's data (a drive
 * named "SHUTDOWN") must not read as a shutdown.
 */
#ifndef PAGEHINT_QMP_H
#define PAGEHINT_QMP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

enum qmp_kind {
	QMP_INVALID,		/* not JSON, not an object, or not QMP */
	QMP_GREETING,
	QMP_EVENT,
	QMP_RETURN,		/* a command's success */
	QMP_ERROR,		/* a command's failure */
};

/* One message, as far as pagehintd cares; strings are NUL-terminated copies. */
struct qmp_message {
	enum qmp_kind kind;
	long long id;		/* replies: the id of the command; -1 if none */
	char event[64];		/* events: the name */
	char reason[64];	/* SHUTDOWN: data.reason */
	char status[32];	/* query-status reply: return.status */
	char error[160];	/* errors: error.desc */
};

#define QMP_PENDING	32

/*
 * No write to QEMU may block the daemon: the socket is non-blocking, and
 * what it does not take at once waits in out[], sent as it drains.  A
 * peer that stops reading is given up (qmp_stalled()) once out[] cannot
 * take a command, or once what waits there has not moved for
 * QMP_DRAIN_MS.  Our commands are a few dozen bytes and at most a few are
 * outstanding at once, and the socket's own buffer takes hundreds of them
 * first: a peer that leaves 4 KiB waiting reads nothing.
 */
#define QMP_OUT_BYTES	4096
#define QMP_DRAIN_MS	10000

struct qmp {
	int fd;
	size_t len;
	bool skipping;		/* dropping a line longer than buf */
	long long next_id;
	/* events that came while setup waited for a reply, oldest first */
	char *pending[QMP_PENDING];
	unsigned int nr_pending;
	/* the signal mask while waiting for input (NULL: leave it) */
	const sigset_t *wait_mask;
	char buf[16384];
	/* what QEMU's socket has not taken yet */
	size_t out_len;
	bool out_full;		/* a command did not fit: the peer reads nothing */
	double out_moved_ms;	/* CLOCK_MONOTONIC: out[] was last empty or drained */
	char out[QMP_OUT_BYTES];
};

/* Parse one line QEMU sent.  Returns m->kind. */
enum qmp_kind qmp_parse(const char *line, struct qmp_message *m);

/* Make @fd, a connected stream socket, q's connection: non-blocking. */
int qmp_init(struct qmp *q, int fd);
int qmp_connect(struct qmp *q, const char *path, char *err, size_t errlen);
/*
 * Send one command; arguments is a JSON object's text, or NULL for none.
 * Never blocks: what the socket does not take waits in q->out.  Returns
 * the command's id, for matching its reply, or -1 when the command could
 * not be sent: errno ENOBUFS when the peer left q->out full, or the
 * socket's error (EPIPE: QEMU closed it).
 */
long long qmp_execute(struct qmp *q, const char *command, const char *arguments);
/*
 * Whether the peer stopped reading: a command did not fit in q->out, or
 * what waits there has not moved for QMP_DRAIN_MS by @now_ms
 * (CLOCK_MONOTONIC, as qmp_now_ms()).  Such a peer is dropped.
 */
bool qmp_stalled(const struct qmp *q, double now_ms);
/* How long a wait may last from @now_ms before qmp_stalled() must be asked. */
int qmp_wait_bound_ms(const struct qmp *q, double now_ms, int timeout_ms);
double qmp_now_ms(void);
/*
 * Wait up to timeout_ms for input, sending what waits in q->out as the
 * socket takes it; return the next complete line (without its newline)
 * or NULL (also when a signal came, or the socket took output only).
 * Sets *eof when QEMU closed the connection.  A line longer than the
 * buffer is dropped whole.  Events that qmp_command() set aside come
 * first.
 */
const char *qmp_next_line(struct qmp *q, int timeout_ms, int *eof);
/*
 * Send a command and wait up to timeout_ms for its reply.  Returns
 * QMP_RETURN or QMP_ERROR (the reply in *reply), or QMP_INVALID on a
 * timeout, on EOF or when it could not be sent.  Events that arrive
 * meanwhile are set aside for qmp_next_line(), up to QMP_PENDING of them.
 */
enum qmp_kind qmp_command(struct qmp *q, const char *command, const char *arguments,
			  int timeout_ms, struct qmp_message *reply);
void qmp_close(struct qmp *q);

#endif
