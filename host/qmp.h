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
};

/* Parse one line QEMU sent.  Returns m->kind. */
enum qmp_kind qmp_parse(const char *line, struct qmp_message *m);

int qmp_connect(struct qmp *q, const char *path, char *err, size_t errlen);
/*
 * Send one command; arguments is a JSON object's text, or NULL for none.
 * Returns the command's id, for matching its reply, or -1 when the
 * command could not be sent.
 */
long long qmp_execute(struct qmp *q, const char *command, const char *arguments);
/*
 * Wait up to timeout_ms for input; return the next complete line (without
 * its newline) or NULL (also when a signal came).  Sets *eof when QEMU
 * closed the connection.  A line longer than the buffer is dropped whole.
 * Events that qmp_command() set aside come first.
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
