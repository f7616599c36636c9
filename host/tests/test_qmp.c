// SPDX-License-Identifier: GPL-2.0
/*
 * QMP as hostile input: the parser against forged and broken messages,
 * and pagehintd itself against a fake QEMU that sends errors, closes the
 * socket in the middle of a reset, forges event names and sends huge
 * lines.  The fake QEMU waits for each command the daemon must send, so
 * no case depends on how fast the daemon runs.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../qmp.h"
#include "../table.h"

#define MiB (1ULL << 20)

/* only a failing case ever waits this long */
static const struct timeval reply_timeout = { .tv_sec = 30 };

extern char **environ;

static void test_parse_events_and_replies(void **state)
{
	struct qmp_message m;

	(void)state;
	assert_int_equal(qmp_parse("{\"QMP\": {\"version\": {}, \"capabilities\": []}}", &m),
			 QMP_GREETING);
	assert_int_equal(qmp_parse("{\"event\": \"SHUTDOWN\", \"data\": {\"guest\": true, "
				   "\"reason\": \"guest-reset\"}, \"timestamp\": {}}", &m),
			 QMP_EVENT);
	assert_string_equal(m.event, "SHUTDOWN");
	assert_string_equal(m.reason, "guest-reset");
	assert_int_equal(qmp_parse("{\"return\": {\"status\": \"shutdown\", \"running\": false}, "
				   "\"id\": 7}", &m), QMP_RETURN);
	assert_int_equal(m.id, 7);
	assert_string_equal(m.status, "shutdown");
	assert_int_equal(qmp_parse("{\"error\": {\"class\": \"GenericError\", \"desc\": \"no\"}, "
				   "\"id\": 8}", &m), QMP_ERROR);
	assert_int_equal(m.id, 8);
	assert_string_equal(m.error, "no");
}

/* The forgery that reset a running guest's table: names inside data. */
static void test_parse_forged_names(void **state)
{
	struct qmp_message m;

	(void)state;
	assert_int_equal(qmp_parse("{\"event\": \"DEVICE_TRAY_MOVED\", \"data\": {\"device\": "
				   "\"SHUTDOWN\", \"id\": \"guest-reset\", \"tray-open\": true}}",
				   &m), QMP_EVENT);
	assert_string_equal(m.event, "DEVICE_TRAY_MOVED");
	assert_string_equal(m.reason, "");
	/* a reason that is not a string is no reason */
	qmp_parse("{\"event\": \"SHUTDOWN\", \"data\": {\"reason\": [\"guest-reset\"]}}", &m);
	assert_string_equal(m.reason, "");
	/* an event name that is not a string is no event */
	assert_int_equal(qmp_parse("{\"event\": {\"SHUTDOWN\": 1}}", &m), QMP_INVALID);
}

static void test_parse_junk(void **state)
{
	static const char *const junk[] = {
		"", "SHUTDOWN", "{", "[\"event\", \"SHUTDOWN\"]", "\"event\"", "42", "null",
		"{\"event\": \"SHUTDOWN\"", "{\"return\"}",
	};
	struct qmp_message m;
	char deep[2048];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		assert_int_equal(qmp_parse(junk[i], &m), QMP_INVALID);
	/* nesting deeper than json-c's limit */
	for (i = 0; i < 1000; i++)
		deep[i] = '[';
	deep[i] = 0;
	assert_int_equal(qmp_parse(deep, &m), QMP_INVALID);
	/* a string longer than the field: cut, still terminated */
	memset(deep, 'A', sizeof(deep));
	memcpy(deep, "{\"event\": \"", 11);
	strcpy(deep + sizeof(deep) - 4, "\"}");
	assert_int_equal(qmp_parse(deep, &m), QMP_EVENT);
	assert_int_equal(strlen(m.event), sizeof(m.event) - 1);
}

/* A line longer than the buffer is dropped whole; the next one is read. */
static void test_huge_line_dropped(void **state)
{
	struct qmp q = { .next_id = 1 };
	static char huge[100000];
	const char *line = NULL;
	int sv[2], eof, tries;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	q.fd = sv[0];
	memset(huge, 'x', sizeof(huge));
	huge[sizeof(huge) - 1] = '\n';
	if (fork() == 0) {
		/* no cmocka here: a failure must not run the rest of the suite twice */
		close(sv[0]);
		_exit(write(sv[1], huge, sizeof(huge)) != sizeof(huge) ||
		      write(sv[1], "{\"event\": \"RESET\"}\n", 19) != 19);
	}
	close(sv[1]);
	for (tries = 0; tries < 1000 && !line; tries++) {
		line = qmp_next_line(&q, -1, &eof);
		assert_false(eof);
	}
	assert_non_null(line);
	assert_string_equal(line, "{\"event\": \"RESET\"}");
	wait(NULL);
	close(sv[0]);
}

static void write_blocked(int sig)
{
	static const char msg[] = "test_qmp: a write to a peer that does not read blocked\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

/*
 * A peer that never reads: every command is queued or refused at once,
 * never a write that waits.  The socket's buffer fills, then q->out, and
 * then a command is refused with ENOBUFS and the peer counts as stalled.
 * The alarm only ends a test that blocked; nothing here depends on time.
 */
static void test_execute_never_blocks(void **state)
{
	struct qmp q;
	long long sent = 0, id = 0;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(qmp_init(&q, sv[0]), 0);
	signal(SIGALRM, write_blocked);
	alarm(30);
	/* the socket takes a few hundred KiB at most: far fewer commands */
	while (sent < 1000000 && (id = qmp_execute(&q, "quit", NULL)) > 0)
		sent++;
	alarm(0);
	assert_int_equal(id, -1);
	assert_int_equal(errno, ENOBUFS);
	assert_true(sent > 0);
	assert_true(q.out_len > 0 && q.out_len <= QMP_OUT_BYTES);
	assert_true(qmp_stalled(&q, q.out_moved_ms));
	close(sv[0]);
	close(sv[1]);
}

/* Drain what the peer was sent, without waiting. */
static void peer_reads(int fd)
{
	char buf[65536];

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/*
 * What waits for a peer that reads nothing is given QMP_DRAIN_MS, and
 * the daemon's wait is bounded by it; a peer that reads again is not
 * stalled.  The clock is the test's argument, not the machine's.
 */
static void test_stalled_after_drain_ms(void **state)
{
	struct qmp q;
	int sv[2], eof, tries;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(qmp_init(&q, sv[0]), 0);
	for (tries = 0; tries < 1000000 && !q.out_len; tries++)
		assert_true(qmp_execute(&q, "cont", NULL) > 0);
	assert_true(q.out_len > 0);
	assert_false(qmp_stalled(&q, q.out_moved_ms + QMP_DRAIN_MS - 1));
	assert_true(qmp_stalled(&q, q.out_moved_ms + QMP_DRAIN_MS));
	assert_true(qmp_wait_bound_ms(&q, q.out_moved_ms, 3600000) <= QMP_DRAIN_MS + 1);
	assert_int_equal(qmp_wait_bound_ms(&q, q.out_moved_ms + QMP_DRAIN_MS, 3600000), 1);
	/* the peer reads: the next wait sends the rest */
	peer_reads(sv[1]);
	assert_null(qmp_next_line(&q, 30000, &eof));
	assert_false(eof);
	assert_int_equal(q.out_len, 0);
	assert_false(qmp_stalled(&q, q.out_moved_ms + 2 * QMP_DRAIN_MS));
	assert_int_equal(qmp_wait_bound_ms(&q, q.out_moved_ms, 3600000), 3600000);
	close(sv[0]);
	close(sv[1]);
}

/* The fake QEMU: a listening socket, and pagehintd connected to it. */
struct fake {
	char dir[64], table[96], ram[96], sock[96], err[4096];
	int listen_fd, fd;
	FILE *in;
	pid_t pid;
	int errfd;
	struct table t;		/* a view of the table, to play the guest */
};

static void send_line(struct fake *f, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	buf[n++] = '\n';
	assert_int_equal(write(f->fd, buf, n), n);
}

/* Read the daemon's next command; it must be COMMAND.  Returns its id. */
static long long expect_command(struct fake *f, const char *command)
{
	struct json_object *obj, *v;
	char line[1024];
	long long id = -1;

	if (!fgets(line, sizeof(line), f->in))
		fail_msg("waited %ld s for %s: the daemon sent nothing", (long)reply_timeout.tv_sec,
			 command);
	obj = json_tokener_parse(line);
	assert_non_null(obj);
	assert_true(json_object_object_get_ex(obj, "execute", &v));
	if (strcmp(json_object_get_string(v), command))
		fail_msg("expected %s, the daemon sent %s", command, line);
	if (json_object_object_get_ex(obj, "id", &v))
		id = json_object_get_int64(v);
	json_object_put(obj);
	return id;
}

static void reply(struct fake *f, long long id, const char *ret)
{
	send_line(f, "{\"return\": %s, \"id\": %lld}", ret, id);
}

/* Start pagehintd on a new table, with the guest attached, up to the loop. */
static void start_daemon(struct fake *f, const char *status)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char *argv[] = { PAGEHINTD, "run", "--table", f->table, "--ram", f->ram, "--qmp", f->sock,
			 NULL };
	posix_spawn_file_actions_t fa;
	char errpath[128];

	assert_int_equal(table_create(f->table, f->ram, 64 * MiB, false, f->err, sizeof(f->err)), 0);
	assert_int_equal(table_open_readonly(&f->t, f->table, f->ram, f->err, sizeof(f->err)), 0);
	/* attached: the guest's copy of the epoch, written as the guest does */
	{
		int fd = open(f->table, O_RDWR);
		uint64_t epoch = f->t.hdr->host_epoch;

		assert_int_equal(pwrite(fd, &epoch, sizeof(epoch),
					offsetof(struct pagehint_header, guest_epoch)), sizeof(epoch));
		close(fd);
	}
	assert_true(table_attached(&f->t));
	f->listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
	strcpy(addr.sun_path, f->sock);
	assert_int_equal(bind(f->listen_fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(f->listen_fd, 1), 0);
	/* a daemon that exits before it connects fails the case, late */
	assert_int_equal(setsockopt(f->listen_fd, SOL_SOCKET, SO_RCVTIMEO, &reply_timeout,
				    sizeof(reply_timeout)), 0);
	snprintf(errpath, sizeof(errpath), "%s/stderr", f->dir);
	f->errfd = open(errpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, f->errfd, 2);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	assert_int_equal(posix_spawn(&f->pid, PAGEHINTD, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	f->fd = accept(f->listen_fd, NULL, NULL);
	if (f->fd < 0)
		fail_msg("pagehintd never connected: %s", strerror(errno));
	/* a daemon that never sends what a case waits for fails it, late */
	assert_int_equal(setsockopt(f->fd, SOL_SOCKET, SO_RCVTIMEO, &reply_timeout,
				    sizeof(reply_timeout)), 0);
	f->in = fdopen(dup(f->fd), "r");
	send_line(f, "{\"QMP\": {\"version\": {}, \"capabilities\": []}}");
	reply(f, expect_command(f, "qmp_capabilities"), "{}");
	reply(f, expect_command(f, "set-action"), "{}");
	reply(f, expect_command(f, "query-status"), status);
}

/* QEMU goes away: both ends of its connection close. */
static void hang_up(struct fake *f)
{
	fclose(f->in);
	f->in = NULL;
	close(f->fd);
	f->fd = -1;
}

/* The end of the daemon's stderr, in f->err: what it said last. */
static void read_err(struct fake *f)
{
	off_t size = lseek(f->errfd, 0, SEEK_END);
	ssize_t n;

	n = pread(f->errfd, f->err, sizeof(f->err) - 1,
		  size > (off_t)sizeof(f->err) - 1 ? size - (off_t)sizeof(f->err) + 1 : 0);
	f->err[n > 0 ? n : 0] = 0;
}

/* Wait for the daemon to exit; returns its status, the end of its stderr in f->err. */
static int daemon_exit(struct fake *f)
{
	int status;

	int waited_ms = 0;

	/* only a daemon that should have exited and did not waits this long */
	while (waitpid(f->pid, &status, WNOHANG) == 0) {
		if (waited_ms >= reply_timeout.tv_sec * 1000)
			fail_msg("pagehintd has not exited after %ld s", (long)reply_timeout.tv_sec);
		usleep(10000);
		waited_ms += 10;
	}
	f->pid = 0;
	read_err(f);
	if (!WIFEXITED(status))
		fail_msg("pagehintd died of signal %d: %s", WTERMSIG(status), f->err);
	return WEXITSTATUS(status);
}

static int setup_fake(void **state)
{
	struct fake *f = calloc(1, sizeof(*f));

	strcpy(f->dir, "/tmp/pagehint-qmp-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->table, sizeof(f->table), "%s/table", f->dir);
	snprintf(f->ram, sizeof(f->ram), "%s/ram", f->dir);
	snprintf(f->sock, sizeof(f->sock), "%s/qmp", f->dir);
	f->fd = f->listen_fd = f->errfd = -1;
	*state = f;
	return 0;
}

static int teardown_fake(void **state)
{
	struct fake *f = *state;
	char path[128];

	if (f->pid > 0) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
	}
	if (f->in)
		fclose(f->in);
	if (f->t.hdr)
		table_close(&f->t);
	if (f->fd >= 0)
		close(f->fd);
	if (f->listen_fd >= 0)
		close(f->listen_fd);
	if (f->errfd >= 0)
		close(f->errfd);
	snprintf(path, sizeof(path), "%s/stderr", f->dir);
	unlink(path);
	unlink(f->sock);
	unlink(f->table);
	unlink(f->ram);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* The daemon's half of a reboot stop: the stopping action off, a reset. */
static void expect_reset(struct fake *f)
{
	reply(f, expect_command(f, "set-action"), "{}");
	reply(f, expect_command(f, "system_reset"), "{}");
}

/* QEMU has reset the guest: the daemon restores the action and resumes. */
static void reset_and_expect_resume(struct fake *f)
{
	send_line(f, "{\"event\": \"RESET\", \"data\": {\"reason\": \"host-qmp-system-reset\"}}");
	reply(f, expect_command(f, "set-action"), "{}");
	reply(f, expect_command(f, "cont"), "{}");
}

static const char running[] = "{\"status\": \"running\", \"running\": true}";

/*
 * A forged event, then a real power-off: the daemon handles events in
 * order, so when it asks to quit it has read the forgery, and the table
 * must be as it was.
 */
static void test_forged_event_keeps_table(void **state)
{
	struct fake *f = *state;
	uint64_t epoch;

	start_daemon(f, running);
	epoch = f->t.hdr->host_epoch;
	send_line(f, "{\"event\": \"DEVICE_TRAY_MOVED\", \"data\": {\"device\": \"SHUTDOWN\", "
		  "\"id\": \"guest-reset\", \"tray-open\": true}}");
	/* an error that answers no command of ours (QEMU's reply to junk) */
	send_line(f, "{\"error\": {\"class\": \"GenericError\", \"desc\": \"JSON parse error\"}}");
	send_line(f, "{\"event\": \"SHUTDOWN\", \"data\": {\"guest\": true, \"reason\": "
		  "\"guest-shutdown\"}}");
	expect_command(f, "quit");
	assert_int_equal(f->t.hdr->host_epoch, epoch);
	assert_true(table_attached(&f->t));
	hang_up(f);
	assert_int_equal(daemon_exit(f), 0);
}

/*
 * A line longer than the daemon's buffer that ends in a forged reboot
 * stop, then a power-off: the daemon must drop the whole line, forgery
 * included, and act on the power-off alone.
 */
static void test_huge_line_is_dropped_whole(void **state)
{
	static const char tail[] = "{\"event\": \"SHUTDOWN\", \"data\": {\"reason\": \"guest-reset\"}}\n";
	struct fake *f = *state;
	static char huge[200000];
	uint64_t epoch;

	start_daemon(f, running);
	epoch = f->t.hdr->host_epoch;
	memset(huge, ' ', sizeof(huge));
	memcpy(huge + sizeof(huge) - sizeof(tail), tail, sizeof(tail));
	assert_int_equal(write(f->fd, huge, sizeof(huge) - 1), sizeof(huge) - 1);
	send_line(f, "{\"event\": \"SHUTDOWN\", \"data\": {\"reason\": \"guest-shutdown\"}}");
	expect_command(f, "quit");
	assert_int_equal(f->t.hdr->host_epoch, epoch);
	hang_up(f);
	assert_int_equal(daemon_exit(f), 0);
}

/* A whole reboot: stop, new epoch, reset, resume. */
static void test_reboot(void **state)
{
	struct fake *f = *state;
	uint64_t epoch;

	start_daemon(f, running);
	epoch = f->t.hdr->host_epoch;
	send_line(f, "{\"event\": \"SHUTDOWN\", \"data\": {\"reason\": \"guest-reset\"}}");
	expect_reset(f);
	assert_int_not_equal(f->t.hdr->host_epoch, epoch);
	assert_false(table_attached(&f->t));
	reset_and_expect_resume(f);
	hang_up(f);
	assert_int_equal(daemon_exit(f), 0);
}

/*
 * A guest detaches when it shuts down, so at its reboot stop the table no
 * longer shows that a boot used the epoch: the daemon remembers it, and
 * the next boot still gets a new epoch.
 */
static void test_reboot_after_detach(void **state)
{
	struct fake *f = *state;
	uint64_t epoch, zero = 0;
	int fd;

	start_daemon(f, running);
	epoch = f->t.hdr->host_epoch;
	fd = open(f->table, O_RDWR);
	assert_int_equal(pwrite(fd, &zero, sizeof(zero),
				offsetof(struct pagehint_header, guest_epoch)), sizeof(zero));
	close(fd);
	send_line(f, "{\"event\": \"SHUTDOWN\", \"data\": {\"reason\": \"guest-reset\"}}");
	expect_reset(f);
	assert_int_not_equal(f->t.hdr->host_epoch, epoch);
	reset_and_expect_resume(f);
	/* the old boot's second way, before the new boot attached: no new epoch */
	epoch = f->t.hdr->host_epoch;
	send_line(f, "{\"event\": \"SHUTDOWN\", \"data\": {\"reason\": \"guest-reset\"}}");
	expect_reset(f);
	assert_int_equal(f->t.hdr->host_epoch, epoch);
	hang_up(f);
	assert_int_equal(daemon_exit(f), 0);
}

/* QEMU refuses the cont: the daemon says so and exits. */
static void test_refused_cont_is_reported(void **state)
{
	struct fake *f = *state;

	start_daemon(f, running);
	send_line(f, "{\"event\": \"SHUTDOWN\", \"data\": {\"reason\": \"guest-reset\"}}");
	expect_reset(f);
	send_line(f, "{\"event\": \"RESET\", \"data\": {\"reason\": \"host-qmp-system-reset\"}}");
	reply(f, expect_command(f, "set-action"), "{}");
	send_line(f, "{\"error\": {\"class\": \"GenericError\", \"desc\": \"no\"}, \"id\": %lld}",
		  expect_command(f, "cont"));
	assert_int_equal(daemon_exit(f), 1);
	if (!strstr(f->err, "QEMU refused the cont for the guest's reboot: no"))
		fail_msg("no refusal in: %s", f->err);
}

/* QEMU refuses the reset: the daemon says so and exits, not "resetting" forever. */
static void test_refused_reset_is_reported(void **state)
{
	struct fake *f = *state;

	start_daemon(f, running);
	send_line(f, "{\"event\": \"SHUTDOWN\", \"data\": {\"reason\": \"guest-reset\"}}");
	reply(f, expect_command(f, "set-action"), "{}");
	send_line(f, "{\"error\": {\"class\": \"GenericError\", \"desc\": \"not now\"}, "
		  "\"id\": %lld}", expect_command(f, "system_reset"));
	assert_int_equal(daemon_exit(f), 1);
	if (!strstr(f->err, "QEMU refused the system_reset for the guest's reboot: not now"))
		fail_msg("no refusal in: %s", f->err);
}

/*
 * QEMU stops reading in the middle of a reboot: the daemon's next command
 * meets a closed socket.  That is EPIPE and an exit with a message, not a
 * death by SIGPIPE with the guest stopped and nobody told.
 */
static void test_closed_socket_mid_reboot(void **state)
{
	struct fake *f = *state;

	start_daemon(f, running);
	assert_int_equal(shutdown(f->fd, SHUT_RD), 0);
	send_line(f, "{\"event\": \"SHUTDOWN\", \"data\": {\"reason\": \"guest-reset\"}}");
	assert_int_equal(daemon_exit(f), 1);
	if (!strstr(f->err, "could not send set-action to QEMU (Broken pipe)"))
		fail_msg("unexpected: %s", f->err);
}

/*
 * A QEMU that stops reading its socket while it sends events that each
 * ask for a command (a guest that powers off, again and again): the
 * daemon's writes used to block with its signals blocked, and only
 * SIGKILL ended it.  It must give up on the peer, say why and exit,
 * after a bounded number of events: the count decides, not the clock.
 */
static void test_peer_that_stops_reading_is_dropped(void **state)
{
	static const char off[] = "{\"event\": \"SHUTDOWN\", \"data\": {\"reason\": \"guest-shutdown\"}}\n";
	struct fake *f = *state;
	int sent;

	start_daemon(f, running);
	/*
	 * Send until the daemon has hung up (EPIPE) or, wedged, has read
	 * nothing for 30 s (reply_timeout), whichever comes first.
	 */
	assert_int_equal(setsockopt(f->fd, SOL_SOCKET, SO_SNDTIMEO, &reply_timeout,
				    sizeof(reply_timeout)), 0);
	for (sent = 0; sent < 1000000; sent++)
		if (send(f->fd, off, sizeof(off) - 1, MSG_NOSIGNAL) != sizeof(off) - 1)
			break;
	assert_int_equal(daemon_exit(f), 1);
	if (!strstr(f->err, "QEMU stopped reading its QMP socket") ||
	    !strstr(f->err, "the next did not fit; dropping the connection"))
		fail_msg("after %d events: %s", sent, f->err);
}

/* A guest a dead predecessor left stopped in a reboot is reset and resumed. */
static void test_left_stopped_is_resumed(void **state)
{
	struct fake *f = *state;
	uint64_t epoch;

	start_daemon(f, "{\"status\": \"shutdown\", \"running\": false}");
	epoch = f->t.hdr->guest_epoch;
	expect_reset(f);
	assert_int_not_equal(f->t.hdr->host_epoch, epoch);
	reset_and_expect_resume(f);
	hang_up(f);
	assert_int_equal(daemon_exit(f), 0);
	assert_non_null(strstr(f->err, "the guest was left stopped in a reboot: new table epoch"));
}

/* A guest a dead predecessor reset but did not resume is resumed. */
static void test_left_reset_is_resumed(void **state)
{
	struct fake *f = *state;

	start_daemon(f, "{\"status\": \"prelaunch\", \"running\": false}");
	reply(f, expect_command(f, "set-action"), "{}");
	reply(f, expect_command(f, "cont"), "{}");
	hang_up(f);
	assert_int_equal(daemon_exit(f), 0);
	assert_non_null(strstr(f->err, "left reset but not resumed: resuming it"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_events_and_replies),
		cmocka_unit_test(test_parse_forged_names),
		cmocka_unit_test(test_parse_junk),
		cmocka_unit_test(test_huge_line_dropped),
		cmocka_unit_test(test_execute_never_blocks),
		cmocka_unit_test(test_stalled_after_drain_ms),
		cmocka_unit_test_setup_teardown(test_forged_event_keeps_table, setup_fake,
						teardown_fake),
		cmocka_unit_test_setup_teardown(test_huge_line_is_dropped_whole, setup_fake,
						teardown_fake),
		cmocka_unit_test_setup_teardown(test_reboot, setup_fake, teardown_fake),
		cmocka_unit_test_setup_teardown(test_reboot_after_detach, setup_fake,
						teardown_fake),
		cmocka_unit_test_setup_teardown(test_refused_cont_is_reported, setup_fake,
						teardown_fake),
		cmocka_unit_test_setup_teardown(test_refused_reset_is_reported, setup_fake,
						teardown_fake),
		cmocka_unit_test_setup_teardown(test_closed_socket_mid_reboot, setup_fake,
						teardown_fake),
		cmocka_unit_test_setup_teardown(test_peer_that_stops_reading_is_dropped, setup_fake,
						teardown_fake),
		cmocka_unit_test_setup_teardown(test_left_stopped_is_resumed, setup_fake,
						teardown_fake),
		cmocka_unit_test_setup_teardown(test_left_reset_is_resumed, setup_fake,
						teardown_fake),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("qmp", tests, NULL, NULL);
}
