// SPDX-License-Identifier: GPL-2.0
/*
 * QEMU's machine protocol, the part pagehintd speaks (qmp.h).  What QEMU
 * sends is input like the table: parsed by json-c, checked field by field.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "qmp.h"

#define fail(...) ({ snprintf(err, errlen, __VA_ARGS__); -1; })

/* Copy the string at obj.key (a string, else "") into buf. */
static void get_string(struct json_object *obj, const char *key, char *buf, size_t len)
{
	struct json_object *v;

	buf[0] = 0;
	if (obj && json_object_object_get_ex(obj, key, &v) && json_object_is_type(v, json_type_string))
		snprintf(buf, len, "%s", json_object_get_string(v));
}

static struct json_object *get_object(struct json_object *obj, const char *key)
{
	struct json_object *v;

	if (obj && json_object_object_get_ex(obj, key, &v) && json_object_is_type(v, json_type_object))
		return v;
	return NULL;
}

enum qmp_kind qmp_parse(const char *line, struct qmp_message *m)
{
	struct json_object *obj = json_tokener_parse(line), *v;

	memset(m, 0, sizeof(*m));
	m->id = -1;
	if (!obj || !json_object_is_type(obj, json_type_object))
		goto out;
	if (json_object_object_get_ex(obj, "id", &v) && json_object_is_type(v, json_type_int))
		m->id = json_object_get_int64(v);
	if (get_object(obj, "QMP")) {
		m->kind = QMP_GREETING;
	} else if (json_object_object_get_ex(obj, "event", &v) &&
		   json_object_is_type(v, json_type_string)) {
		m->kind = QMP_EVENT;
		get_string(obj, "event", m->event, sizeof(m->event));
		get_string(get_object(obj, "data"), "reason", m->reason, sizeof(m->reason));
	} else if (json_object_object_get_ex(obj, "return", &v)) {
		m->kind = QMP_RETURN;
		get_string(get_object(obj, "return"), "status", m->status, sizeof(m->status));
	} else if (get_object(obj, "error")) {
		m->kind = QMP_ERROR;
		get_string(get_object(obj, "error"), "desc", m->error, sizeof(m->error));
	}
out:
	json_object_put(obj);
	return m->kind;
}

double qmp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Send what waits in q->out, as much as the socket takes now. */
static int flush(struct qmp *q)
{
	ssize_t n;

	while (q->out_len) {
		/* MSG_NOSIGNAL: a closed socket is EPIPE here and EOF on read */
		n = send(q->fd, q->out, q->out_len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		memmove(q->out, q->out + n, q->out_len - n);
		q->out_len -= n;
		q->out_moved_ms = qmp_now_ms();
	}
	return 0;
}

long long qmp_execute(struct qmp *q, const char *command, const char *arguments)
{
	long long id = q->next_id++;
	char msg[256];
	int n;

	if (arguments)
		n = snprintf(msg, sizeof(msg), "{\"execute\": \"%s\", \"arguments\": %s, \"id\": %lld}\n",
			     command, arguments, id);
	else
		n = snprintf(msg, sizeof(msg), "{\"execute\": \"%s\", \"id\": %lld}\n", command, id);
	if (n < 0 || (size_t)n >= sizeof(msg)) {
		errno = EINVAL;
		return -1;
	}
	if (q->out_len + n > sizeof(q->out)) {
		q->out_full = true;
		errno = ENOBUFS;
		return -1;
	}
	if (!q->out_len)
		q->out_moved_ms = qmp_now_ms();
	memcpy(q->out + q->out_len, msg, n);
	q->out_len += n;
	return flush(q) ? -1 : id;
}

bool qmp_stalled(const struct qmp *q, double now_ms)
{
	return q->out_full || (q->out_len && now_ms - q->out_moved_ms >= QMP_DRAIN_MS);
}

int qmp_wait_bound_ms(const struct qmp *q, double now_ms, int timeout_ms)
{
	double left;

	if (!q->out_len)
		return timeout_ms;
	left = q->out_moved_ms + QMP_DRAIN_MS - now_ms;
	if (left < 0)
		left = 0;
	return timeout_ms < 0 || left < timeout_ms ? (int)left + 1 : timeout_ms;
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

/* The next line from the socket itself. */
static const char *read_line(struct qmp *q, int timeout_ms, int *eof)
{
	struct pollfd pfd = { .fd = q->fd, .events = POLLIN };
	struct timespec ts = { timeout_ms / 1000, timeout_ms % 1000 * 1000000L };
	const char *line;
	ssize_t n;

	*eof = 0;
	line = take_line(q);
	if (line)
		return line;
	if (q->out_len)
		pfd.events |= POLLOUT;
	/* ppoll: a signal the caller blocked until now ends the wait */
	if (ppoll(&pfd, 1, timeout_ms < 0 ? NULL : &ts, q->wait_mask) <= 0)
		return NULL;
	if (pfd.revents & POLLOUT && flush(q)) {
		*eof = 1;
		return NULL;
	}
	if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
		return NULL;
	if (q->len == sizeof(q->buf)) {
		/* a line longer than any message we read: drop it to its end */
		q->len = 0;
		q->skipping = true;
	}
	n = read(q->fd, q->buf + q->len, sizeof(q->buf) - q->len);
	if (n <= 0) {
		*eof = n == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK);
		return NULL;
	}
	q->len += n;
	if (q->skipping) {
		char *nl = memchr(q->buf, '\n', q->len);

		if (!nl) {
			q->len = 0;
			return NULL;
		}
		q->skipping = false;
		q->len -= nl + 1 - q->buf;
		memmove(q->buf, nl + 1, q->len);
	}
	return take_line(q);
}

const char *qmp_next_line(struct qmp *q, int timeout_ms, int *eof)
{
	static char event[sizeof(q->buf)];

	if (q->nr_pending) {
		*eof = 0;
		snprintf(event, sizeof(event), "%s", q->pending[0]);
		free(q->pending[0]);
		memmove(q->pending, q->pending + 1, --q->nr_pending * sizeof(q->pending[0]));
		return event;
	}
	return read_line(q, timeout_ms, eof);
}

/* Wait for the reply with id (or, for id -1, the greeting). */
static enum qmp_kind wait_reply(struct qmp *q, long long id, int timeout_ms,
				struct qmp_message *m)
{
	double deadline = qmp_now_ms() + timeout_ms;
	const char *line;
	int eof, left;

	while ((left = (int)(deadline - qmp_now_ms())) > 0) {
		line = read_line(q, left, &eof);
		if (eof)
			break;
		if (!line)
			continue;
		qmp_parse(line, m);
		if (id < 0 ? m->kind == QMP_GREETING :
		    (m->kind == QMP_RETURN || m->kind == QMP_ERROR) && m->id == id)
			return m->kind;
		if (m->kind == QMP_EVENT && q->nr_pending < QMP_PENDING) {
			q->pending[q->nr_pending] = strdup(line);
			if (q->pending[q->nr_pending])
				q->nr_pending++;
		}
	}
	m->kind = QMP_INVALID;
	return QMP_INVALID;
}

enum qmp_kind qmp_command(struct qmp *q, const char *command, const char *arguments,
			  int timeout_ms, struct qmp_message *reply)
{
	long long id = qmp_execute(q, command, arguments);

	if (id < 0) {
		memset(reply, 0, sizeof(*reply));
		return QMP_INVALID;
	}
	return wait_reply(q, id, timeout_ms, reply);
}

int qmp_init(struct qmp *q, int fd)
{
	int flags = fcntl(fd, F_GETFL);

	q->fd = fd;
	q->len = 0;
	q->skipping = false;
	q->next_id = 1;
	q->nr_pending = 0;
	q->wait_mask = NULL;
	q->out_len = 0;
	q->out_full = false;
	q->out_moved_ms = qmp_now_ms();
	return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int qmp_connect(struct qmp *q, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct qmp_message m;
	int fd;

	q->fd = -1;
	q->nr_pending = 0;
	if (strlen(path) >= sizeof(addr.sun_path))
		return fail("QMP socket path %s is too long", path);
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* connected first: a non-blocking connect may say EAGAIN */
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) || qmp_init(q, fd)) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		q->fd = -1;
		return fail("cannot connect to QEMU's QMP socket %s: %s", path, strerror(e));
	}
	/* greeting, then capabilities negotiation, then its answer */
	if (wait_reply(q, -1, 5000, &m) != QMP_GREETING) {
		qmp_close(q);
		return fail("QEMU at %s sent no QMP greeting", path);
	}
	if (qmp_command(q, "qmp_capabilities", NULL, 5000, &m) != QMP_RETURN) {
		qmp_close(q);
		return fail("QEMU at %s refused the QMP handshake: %s", path,
			    m.kind == QMP_ERROR ? m.error : "no reply");
	}
	return 0;
}

void qmp_close(struct qmp *q)
{
	while (q->nr_pending)
		free(q->pending[--q->nr_pending]);
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
}
