// SPDX-License-Identifier: GPL-2.0
/*
 * The operator's mistakes: pagehintd run as a program with arguments it
 * must refuse, each with exit status 2 (1 for a file it cannot use) and
 * a message that names the mistake, and nothing created on the way.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct dir {
	char path[64], table[96], ram[96], fifo[96];
	pid_t daemon;	/* the last daemon start() began: killed at teardown */
};

static int setup_dir(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));

	strcpy(d->path, "/tmp/pagehint-cli-XXXXXX");
	assert_non_null(mkdtemp(d->path));
	snprintf(d->table, sizeof(d->table), "%s/table", d->path);
	snprintf(d->ram, sizeof(d->ram), "%s/ram", d->path);
	snprintf(d->fifo, sizeof(d->fifo), "%s/fifo", d->path);
	*state = d;
	return 0;
}

static int teardown_dir(void **state)
{
	struct dir *d = *state;

	char path[128];

	/*
	 * A case that failed may have left its daemon running: it goes.  Only
	 * a child not yet waited for is killed, never a pid used again since.
	 */
	if (d->daemon > 0 && waitpid(d->daemon, NULL, WNOHANG) == 0) {
		kill(d->daemon, SIGKILL);
		waitpid(d->daemon, NULL, 0);
	}
	unlink(d->table);
	unlink(d->ram);
	unlink(d->fifo);
	snprintf(path, sizeof(path), "%s/stderr", d->path);
	unlink(path);
	snprintf(path, sizeof(path), "%s/notify", d->path);
	unlink(path);
	rmdir(d->path);
	free(d);
	return 0;
}

/* Its exit; only a pagehintd that hangs makes this wait 30 s, and fail. */
static int wait_exit(pid_t pid)
{
	int status, waited_ms;

	for (waited_ms = 0; waitpid(pid, &status, WNOHANG) == 0; waited_ms += 10) {
		if (waited_ms >= 30000) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			fail_msg("pagehintd still runs after 30 s");
		}
		usleep(10000);
	}
	return status;
}

/*
 * What systemd puts in the environment of a service whose stderr is
 * journald's (systemd.exec(5)): the device and inode of that stream.
 */
enum journal { NO_JOURNAL, JOURNAL, OTHER_JOURNAL };

/*
 * Run pagehintd with ARGV (NULL-terminated); its stderr goes to ERR.
 * With JOURNAL, JOURNAL_STREAM names that stderr; with OTHER_JOURNAL it
 * names some other file (a child of a service whose stderr was moved).
 */
static int run_as(enum journal journal, char *const argv[], char *err, size_t errlen)
{
	char errpath[] = "/tmp/pagehint-cli-err-XXXXXX", stream[64];
	char *env[] = { stream, NULL };
	posix_spawn_file_actions_t fa;
	int fd = mkstemp(errpath), status;
	struct stat st;
	ssize_t n;
	pid_t pid;

	assert_true(fd >= 0);
	assert_int_equal(stat(journal == OTHER_JOURNAL ? "/dev/null" : errpath, &st), 0);
	snprintf(stream, sizeof(stream), "JOURNAL_STREAM=%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd, 2);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	assert_int_equal(posix_spawn(&pid, argv[0], &fa, NULL, argv,
				     journal == NO_JOURNAL ? environ : env), 0);
	posix_spawn_file_actions_destroy(&fa);
	status = wait_exit(pid);
	n = pread(fd, err, errlen - 1, 0);
	err[n > 0 ? n : 0] = 0;
	close(fd);
	unlink(errpath);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static int run(char *const argv[], char *err, size_t errlen)
{
	return run_as(NO_JOURNAL, argv, err, errlen);
}

/*
 * Expect exit status STATUS and MESSAGE on stderr from DAEMON (the
 * installed build or the test build), and no table made.
 */
static void expect_from(const char *daemon, struct dir *d, int status, const char *message,
			va_list ap)
{
	char *argv[16] = { (char *)daemon }, err[4096];
	struct stat st;
	int argc = 1;

	while ((argv[argc] = va_arg(ap, char *)))
		argc++;
	assert_int_equal(run(argv, err, sizeof(err)), status);
	if (!strstr(err, message))
		fail_msg("expected \"%s\" in \"%s\"", message, err);
	assert_int_not_equal(stat(d->table, &st), 0);
}

/* The installed build: arguments after MESSAGE, NULL-terminated. */
static void expect(struct dir *d, int status, const char *message, ...)
{
	va_list ap;

	va_start(ap, message);
	expect_from(PAGEHINTD, d, status, message, ap);
	va_end(ap);
}

/* The test build, for its hooks. */
static void expect_hooks(struct dir *d, int status, const char *message, ...)
{
	va_list ap;

	va_start(ap, message);
	expect_from(PAGEHINTD_HOOKS, d, status, message, ap);
	va_end(ap);
}

static void test_mem_mib_that_wraps(void **state)
{
	struct dir *d = *state;

	/* 2^44 + 1 MiB: times 2^20 it wrapped to 1 MiB, and init succeeded */
	expect(d, 2, "--mem-mib 17592186044417 is out of range", "init", "--table", d->table,
	       "--ram", d->ram, "--mem-mib", "17592186044417", NULL);
}

static void test_negative_with_space(void **state)
{
	struct dir *d = *state;

	expect(d, 2, "--mem-mib wants a decimal number, not ' -1'", "init", "--table", d->table,
	       "--ram", d->ram, "--mem-mib", " -1", NULL);
	expect(d, 2, "--target-mib wants a decimal number, not ' -5'", "run", "--table",
	       d->table, "--ram", d->ram, "--target-mib", " -5", NULL);
}

static void test_no_base_prefix(void **state)
{
	struct dir *d = *state;

	expect(d, 2, "--mem-mib wants a decimal number, not '0x40'", "init", "--table", d->table,
	       "--ram", d->ram, "--mem-mib", "0x40", NULL);
}

static void test_milliseconds_that_overflow(void **state)
{
	struct dir *d = *state;

	/* cast to int, 2^31 ms was usleep(0): a busy loop */
	expect(d, 2, "--interval-ms 2147483648 is out of range", "run", "--table", d->table,
	       "--ram", d->ram, "--policy", "periodic", "--interval-ms", "2147483648", NULL);
	expect(d, 2, "--status-ms 4294967296 is out of range", "run", "--table", d->table,
	       "--ram", d->ram, "--status-ms", "4294967296", NULL);
	expect(d, 2, "--max-punches-s 0 is out of range (1 to 10000000)", "run", "--table",
	       d->table, "--ram", d->ram, "--max-punches-s", "0", NULL);
	expect_hooks(d, 2, "--stop-after-claiming wants a decimal number, not '0x10'", "run",
	       "--table", d->table, "--ram", d->ram, "--stop-after-claiming", "0x10", NULL);
	expect(d, 2, "--age-ms 0 is out of range", "run", "--table", d->table, "--ram", d->ram,
	       "--policy", "aged", "--age-ms", "0", NULL);
	expect(d, 2, "--chaos drops at once: no --policy periodic or aged", "run", "--table",
	       d->table, "--ram", d->ram, "--policy", "aged", "--chaos", NULL);
	expect(d, 2, "unknown policy 'oldest'", "run", "--table", d->table, "--ram", d->ram,
	       "--policy", "oldest", NULL);
}

static void test_options_a_command_does_not_take(void **state)
{
	struct dir *d = *state;

	expect(d, 2, "init does not take --chaos", "init", "--table", d->table, "--ram", d->ram,
	       "--mem-mib", "64", "--chaos", NULL);
	expect(d, 2, "status does not take --qmp", "status", "--table", d->table, "--ram", d->ram,
	       "--qmp", "/nonexistent", NULL);
	expect_hooks(d, 2, "status does not take --stop-after-claiming", "status", "--table",
		     d->table, "--ram", d->ram, "--stop-after-claiming", "1", NULL);
	expect(d, 2, "unknown command 'frob'", "frob", "--mem-mib", "1", NULL);
}

static void test_target_file_not_regular(void **state)
{
	struct dir *d = *state;

	/* a FIFO blocked the daemon at start; a directory read as '' */
	assert_int_equal(mkfifo(d->fifo, 0600), 0);
	expect(d, 1, "is not a regular file", "run", "--table", d->table, "--ram", d->ram,
	       "--target-file", d->fifo, NULL);
	expect(d, 1, "is not a regular file", "run", "--table", d->table, "--ram", d->ram,
	       "--target-file", d->path, NULL);
}

/* A frame the table does not have would never be claimed: refused at once. */
static void test_stop_after_claiming_no_such_frame(void **state)
{
	struct dir *d = *state;
	char *init[] = { PAGEHINTD, "init", "--table", d->table, "--ram", d->ram, "--mem-mib", "64",
			 NULL };
	char *argv[] = { PAGEHINTD_HOOKS, "run", "--table", d->table, "--ram", d->ram,
			 "--stop-after-claiming", "16384", NULL };
	char err[4096] = "";

	assert_int_equal(run(init, err, sizeof(err)), 0);
	assert_int_equal(run(argv, err, sizeof(err)), 1);
	if (!strstr(err, "--stop-after-claiming 16384 is not a frame of the guest's RAM"))
		fail_msg("unexpected: %s", err);
}

/* What DAEMON prints on stdout for ARG (--help, --version), with exit status 0. */
static void output_of(const char *daemon, const char *arg, char *out, size_t len)
{
	char cmd[512];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd), "%s %s", daemon, arg);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, len - 1, p);
	out[n] = 0;
	assert_int_equal(pclose(p), 0);
}

/*
 * The test hooks are in the test build only: the installed pagehintd
 * refuses them as unknown, and its --help does not offer them.
 */
static void test_installed_build_has_no_test_hooks(void **state)
{
	struct dir *d = *state;
	static char out[16384];

	expect(d, 2, "unknown option '--stop-after-claiming'", "run", "--table", d->table, "--ram",
	       d->ram, "--stop-after-claiming", "1", NULL);
	output_of(PAGEHINTD, "--help", out, sizeof(out));
	assert_null(strstr(out, "stop-after-claiming"));
	output_of(PAGEHINTD_HOOKS, "--help", out, sizeof(out));
	assert_non_null(strstr(out, "--stop-after-claiming PFN"));
}

/*
 * --help names every command and explains every option the synopsis
 * shows (each has a line of its own under "Options:"); --version says
 * the version the build was given.
 */
static void test_help_and_version(void **state)
{
	static const char *const commands[] = { "init", "run", "status", "table-size" };
	static char out[16384];
	char *p, *options, line[64];
	unsigned int i, nr = 0;

	(void)state;
	output_of(PAGEHINTD, "--help", out, sizeof(out));
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		snprintf(line, sizeof(line), "\n  %s ", commands[i]);
		if (!strstr(out, line))
			fail_msg("--help does not explain command %s: %s", commands[i], out);
	}
	options = strstr(out, "\nOptions:\n");
	assert_non_null(options);
	*options = 0;
	for (p = out; (p = strstr(p, "--")); p += 2) {
		size_t n = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");

		snprintf(line, sizeof(line), "\n  --%.*s", (int)n, p + 2);
		if (!strstr(options + 1, line))
			fail_msg("--help shows --%.*s but does not explain it", (int)n, p + 2);
		nr++;
	}
	assert_true(nr >= 15);
	output_of(PAGEHINTD, "--version", out, sizeof(out));
	assert_string_equal(out, "pagehintd " PAGEHINTD_VERSION "\n");
	output_of(PAGEHINTD, "run --version", out, sizeof(out));
	assert_string_equal(out, "pagehintd " PAGEHINTD_VERSION "\n");
}

/* A pagehintd that runs while a case watches what it says. */
struct daemon {
	pid_t pid;
	int errfd;
	char errpath[128];
	char err[8192];
};

/*
 * Start pagehintd with ARGV, its stderr in a file of d's; JOURNAL as for
 * run_as(), and EXTRA (NULL or NULL-terminated) added to the environment.
 */
static void start(struct dir *d, struct daemon *p, enum journal journal, char *const extra[],
		  char *const argv[])
{
	char stream[64], *env[256];
	posix_spawn_file_actions_t fa;
	unsigned int n = 0, i;
	struct stat st;

	snprintf(p->errpath, sizeof(p->errpath), "%s/stderr", d->path);
	p->errfd = open(p->errpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(p->errfd >= 0);
	p->err[0] = 0;
	/* the daemon's environment: the test's, without what says systemd runs it */
	for (i = 0; environ[i] && n < 200; i++)
		if (strncmp(environ[i], "JOURNAL_STREAM=", 15) &&
		    strncmp(environ[i], "NOTIFY_SOCKET=", 14) &&
		    strncmp(environ[i], "WATCHDOG_", 9))
			env[n++] = environ[i];
	if (journal != NO_JOURNAL) {
		assert_int_equal(stat(journal == JOURNAL ? p->errpath : "/dev/null", &st), 0);
		snprintf(stream, sizeof(stream), "JOURNAL_STREAM=%llu:%llu",
			 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
		env[n++] = stream;
	}
	for (i = 0; extra && extra[i] && n < 255; i++)
		env[n++] = extra[i];
	env[n] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p->errfd, 2);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	assert_int_equal(posix_spawn(&p->pid, argv[0], &fa, NULL, argv, env), 0);
	d->daemon = p->pid;
	posix_spawn_file_actions_destroy(&fa);
}

/* Wait until it said WHAT; only a daemon that does not fails after 30 s. */
static void wait_said(struct daemon *p, const char *what)
{
	int waited_ms, status;
	ssize_t n;

	for (waited_ms = 0;; waited_ms += 10) {
		n = pread(p->errfd, p->err, sizeof(p->err) - 1, 0);
		p->err[n > 0 ? n : 0] = 0;
		if (strstr(p->err, what))
			return;
		if (waited_ms >= 30000 || waitpid(p->pid, &status, WNOHANG) == p->pid) {
			kill(p->pid, SIGKILL);
			waitpid(p->pid, NULL, 0);
			fail_msg("pagehintd never said \"%s\": %s", what, p->err);
		}
		usleep(10000);
	}
}

/* Send SIG and wait for its exit: its exit status, what it said in p->err. */
static int stop(struct daemon *p, int sig)
{
	int status;
	ssize_t n;

	kill(p->pid, sig);
	status = wait_exit(p->pid);
	n = pread(p->errfd, p->err, sizeof(p->err) - 1, 0);
	p->err[n > 0 ? n : 0] = 0;
	close(p->errfd);
	unlink(p->errpath);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/*
 * SIGTERM ends an hour-long wait at once, and the hour is no int overflow
 * (usleep(3600000 * 1000) was undefined; the sanitized daemon aborted).
 */
static void test_sigterm_ends_a_long_wait(void **state)
{
	struct dir *d = *state;
	char *init[] = { PAGEHINTD, "init", "--table", d->table, "--ram", d->ram, "--mem-mib", "64",
			 NULL };
	char *argv[] = { PAGEHINTD, "run", "--table", d->table, "--ram", d->ram, "--policy",
			 "periodic", "--interval-ms", "3600000", NULL };
	char err[4096] = "";
	struct daemon p;

	assert_int_equal(run(init, err, sizeof(err)), 0);
	start(d, &p, NO_JOURNAL, NULL, argv);
	/* its first words come after setup, the handlers before */
	wait_said(&p, "volatile frames are kept");
	assert_int_equal(stop(&p, SIGTERM), 0);
}

/* A socket like systemd's NOTIFY_SOCKET, at PATH; its datagrams wait 30 s at most. */
static int notify_socket(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval timeout = { .tv_sec = 30 };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_true(strlen(path) < sizeof(addr.sun_path));
	memcpy(addr.sun_path, path, strlen(path) + 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)), 0);
	return fd;
}

/* The next datagram the daemon sent systemd; fails the case after 30 s. */
static void notified(int fd, char *buf, size_t len)
{
	ssize_t n = recv(fd, buf, len - 1, 0);

	if (n < 0)
		fail_msg("pagehintd sent systemd nothing in 30 s: %s", strerror(errno));
	buf[n] = 0;
}

/*
 * Under systemd (Type=notify, WatchdogSec=): READY=1 once the daemon
 * serves - after its setup, never from a start that fails - then
 * WATCHDOG=1 at half the watchdog period even while its own wait is an
 * hour (a periodic policy), and STOPPING=1 when it ends.  The order of
 * the datagrams decides; 30 s only ends a case that failed.
 */
static void test_systemd_notify(void **state)
{
	struct dir *d = *state;
	char path[128], env[160], buf[256], err[4096];
	char *init[] = { PAGEHINTD, "init", "--table", d->table, "--ram", d->ram, "--mem-mib", "64",
			 NULL };
	char *argv[] = { PAGEHINTD, "run", "--table", d->table, "--ram", d->ram, "--policy",
			 "periodic", "--interval-ms", "3600000", NULL };
	char *extra[] = { env, "WATCHDOG_USEC=200000", NULL };
	struct daemon p;
	int fd, pings;

	snprintf(path, sizeof(path), "%s/notify", d->path);
	snprintf(env, sizeof(env), "NOTIFY_SOCKET=%s", path);
	fd = notify_socket(path);

	/* no table yet: the start fails, and says nothing to systemd */
	start(d, &p, NO_JOURNAL, extra, argv);
	assert_int_equal(stop(&p, 0), 1);
	assert_int_equal(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), -1);

	assert_int_equal(run(init, err, sizeof(err)), 0);
	start(d, &p, NO_JOURNAL, extra, argv);
	notified(fd, buf, sizeof(buf));
	assert_string_equal(buf, "READY=1");
	/* its setup is done before it says so: the last line of it is written */
	wait_said(&p, "volatile frames are kept");
	for (pings = 0; pings < 3; pings++) {
		notified(fd, buf, sizeof(buf));
		assert_string_equal(buf, "WATCHDOG=1");
	}
	assert_int_equal(stop(&p, SIGTERM), 0);
	do
		notified(fd, buf, sizeof(buf));
	while (!strcmp(buf, "WATCHDOG=1"));
	assert_string_equal(buf, "STOPPING=1");
	close(fd);
	unlink(path);
}

/*
 * Host mode under systemd: READY=1 once its loop runs, WATCHDOG=1 from
 * that loop while libvirtd is out of reach (the daemon waits for it and
 * is alive meanwhile), STOPPING=1 at SIGTERM.
 */
static void test_systemd_notify_host(void **state)
{
	struct dir *d = *state;
	char path[128], env[160], buf[256], uri[256];
	char *argv[] = { PAGEHINTD, "host", "--connect", uri, NULL };
	char *extra[] = { env, "WATCHDOG_USEC=200000", NULL };
	struct daemon p;
	int fd, pings;

	snprintf(path, sizeof(path), "%s/notify", d->path);
	snprintf(env, sizeof(env), "NOTIFY_SOCKET=%s", path);
	snprintf(uri, sizeof(uri), "qemu+unix:///system?socket=%s/no-libvirtd", d->path);
	fd = notify_socket(path);
	start(d, &p, NO_JOURNAL, extra, argv);
	notified(fd, buf, sizeof(buf));
	assert_string_equal(buf, "READY=1");
	wait_said(&p, "cannot reach libvirt at");
	for (pings = 0; pings < 3; pings++) {
		notified(fd, buf, sizeof(buf));
		assert_string_equal(buf, "WATCHDOG=1");
	}
	assert_int_equal(stop(&p, SIGTERM), 0);
	do
		notified(fd, buf, sizeof(buf));
	while (!strcmp(buf, "WATCHDOG=1"));
	assert_string_equal(buf, "STOPPING=1");
	close(fd);
	unlink(path);
}

/*
 * journald takes a line's priority from a leading "<N>" and names the
 * daemon itself: under it each line is "<N>message", an error at 3
 * (LOG_ERR), what the daemon does at 6 (LOG_INFO); anywhere else a "<N>"
 * would be noise, and each line is "pagehintd: message".  A control
 * character from a path (or from QEMU or the guest) cannot start a line
 * of its own, without a priority.
 */
static void test_journal_priorities(void **state)
{
	struct dir *d = *state;
	char bad[] = "/nonexistent/target\n<0>forged";
	char *init[] = { PAGEHINTD, "init", "--table", d->table, "--ram", d->ram, "--mem-mib",
			 "0x40", NULL };
	char *make[] = { PAGEHINTD, "init", "--table", d->table, "--ram", d->ram, "--mem-mib", "64",
			 NULL };
	char *target[] = { PAGEHINTD, "run", "--table", d->table, "--ram", d->ram, "--target-file",
			   bad, NULL };
	char *argv[] = { PAGEHINTD, "run", "--table", d->table, "--ram", d->ram, "--policy",
			 "periodic", "--interval-ms", "3600000", NULL };
	char err[4096];
	struct daemon p;

	assert_int_equal(run_as(JOURNAL, init, err, sizeof(err)), 2);
	assert_string_equal(err, "<3>--mem-mib wants a decimal number, not '0x40'\n");
	assert_int_equal(run_as(OTHER_JOURNAL, init, err, sizeof(err)), 2);
	assert_string_equal(err, "pagehintd: --mem-mib wants a decimal number, not '0x40'\n");
	assert_int_equal(run_as(NO_JOURNAL, init, err, sizeof(err)), 2);
	assert_string_equal(err, "pagehintd: --mem-mib wants a decimal number, not '0x40'\n");

	assert_int_equal(run(make, err, sizeof(err)), 0);
	assert_int_equal(run_as(JOURNAL, target, err, sizeof(err)), 1);
	assert_string_equal(err, "<3>cannot read target file /nonexistent/target?<0>forged: "
			    "No such file or directory\n");

	start(d, &p, JOURNAL, NULL, argv);
	wait_said(&p, "volatile frames are kept");
	assert_int_equal(stop(&p, SIGTERM), 0);
	if (!strstr(p.err, "<6>policy periodic: a pass every 3600000 ms\n"
			   "<6>no target: volatile frames are kept\n") || strstr(p.err, "pagehintd:"))
		fail_msg("not journald's lines: %s", p.err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mem_mib_that_wraps, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_negative_with_space, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_no_base_prefix, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_milliseconds_that_overflow, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_options_a_command_does_not_take, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_target_file_not_regular, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_stop_after_claiming_no_such_frame, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_sigterm_ends_a_long_wait, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_journal_priorities, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_installed_build_has_no_test_hooks, setup_dir,
						teardown_dir),
		cmocka_unit_test(test_help_and_version),
		cmocka_unit_test_setup_teardown(test_systemd_notify_host, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_systemd_notify, setup_dir, teardown_dir),
	};

	return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
