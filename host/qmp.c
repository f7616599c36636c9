// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "qmp.h"

#define fail(...) ({ snprintf(err, errlen, __VA_ARGS__); -1; })

int qmp_execute(struct qmp *q, const char *command, const char *arguments)
{
	char msg[256];
	int n;

	if (arguments)
		n = snprintf(msg, sizeof(msg), "{\"execute\": \"%s\", \"arguments\": %s}\n",
			     command, arguments);
	else
		n = snprintf(msg, sizeof(msg), "{\"execute\": \"%s\"}\n", command);
	if (n < 0 || (size_t)n >= sizeof(msg))
		return -1;
	return write(q->fd, msg, n) == n ? 0 : -1;
}

static const char *take_line(struct qmp *q)
{
	static char line[sizeof(q->buf)];
	char *nl = memchr(q->buf, '\n', q->len);
	size_t n;

	if (!nl)
		return NULL;
	n = nl - q->buf;
	memcpy(line, q->buf, n);
	line[n] = 0;
	memmove(q->buf, nl + 1, q->len - n - 1);
	q->len -= n + 1;
	return line;
}

const char *qmp_next_line(struct qmp *q, int timeout_ms, int *eof)
{
	struct pollfd pfd = { .fd = q->fd, .events = POLLIN };
	const char *line = take_line(q);
	ssize_t n;

	*eof = 0;
	if (line)
		return line;
	if (poll(&pfd, 1, timeout_ms) <= 0)
		return NULL;
	if (q->len == sizeof(q->buf))
		q->len = 0;	/* a line longer than any event we read: drop it */
	n = read(q->fd, q->buf + q->len, sizeof(q->buf) - q->len);
	if (n <= 0) {
		*eof = n == 0 || errno != EINTR;
		return NULL;
	}
	q->len += n;
	return take_line(q);
}

int qmp_connect(struct qmp *q, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	const char *line;
	int eof, tries;

	q->len = 0;
	if (strlen(path) >= sizeof(addr.sun_path))
		return fail("QMP socket path %s is too long", path);
	strcpy(addr.sun_path, path);
	q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (q->fd < 0 || connect(q->fd, (struct sockaddr *)&addr, sizeof(addr))) {
		if (q->fd >= 0)
			close(q->fd);
		return fail("cannot connect to QEMU's QMP socket %s: %s", path, strerror(errno));
	}
	/* greeting, then capabilities negotiation, then its answer */
	for (tries = 0; tries < 50; tries++) {
		line = qmp_next_line(q, 100, &eof);
		if (eof)
			break;
		if (line && strstr(line, "\"QMP\"")) {
			qmp_execute(q, "qmp_capabilities", NULL);
			continue;
		}
		if (line && strstr(line, "\"return\""))
			return 0;
	}
	close(q->fd);
	return fail("QEMU at %s did not complete the QMP handshake", path);
}

void qmp_close(struct qmp *q)
{
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
}
