/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Just enough of QEMU's machine protocol for pagehintd: connect, send a
 * command, and read the event lines QEMU sends (one JSON object a line).
 */
#ifndef PAGEHINT_QMP_H
#define PAGEHINT_QMP_H

#include <stddef.h>

struct qmp {
	int fd;
	size_t len;
	char buf[16384];
};

int qmp_connect(struct qmp *q, const char *path, char *err, size_t errlen);
/* Send one command; arguments is a JSON object's text, or NULL for none. */
int qmp_execute(struct qmp *q, const char *command, const char *arguments);
/*
 * Wait up to timeout_ms for input; return the next complete line (without
 * its newline) or NULL.  Sets *eof when QEMU closed the connection.
 */
const char *qmp_next_line(struct qmp *q, int timeout_ms, int *eof);
void qmp_close(struct qmp *q);

#endif
