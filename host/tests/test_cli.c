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

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct dir {
	char path[64], table[96], ram[96], fifo[96];
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

	unlink(d->table);
	unlink(d->ram);
	unlink(d->fifo);
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

/* Run pagehintd with ARGV (NULL-terminated); its stderr goes to ERR. */
static int run(char *const argv[], char *err, size_t errlen)
{
	char errpath[] = "/tmp/pagehint-cli-err-XXXXXX";
	posix_spawn_file_actions_t fa;
	int fd = mkstemp(errpath), status;
	ssize_t n;
	pid_t pid;

	assert_true(fd >= 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd, 2);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	assert_int_equal(posix_spawn(&pid, PAGEHINTD, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	status = wait_exit(pid);
	n = pread(fd, err, errlen - 1, 0);
	err[n > 0 ? n : 0] = 0;
	close(fd);
	unlink(errpath);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* Expect exit status STATUS and MESSAGE on stderr, and no table made. */
static void expect(struct dir *d, int status, const char *message, ...)
{
	char *argv[16] = { PAGEHINTD }, err[4096];
	struct stat st;
	va_list ap;
	int argc = 1;

	va_start(ap, message);
	while ((argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	assert_int_equal(run(argv, err, sizeof(err)), status);
	if (!strstr(err, message))
		fail_msg("expected \"%s\" in \"%s\"", message, err);
	assert_int_not_equal(stat(d->table, &st), 0);
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
	expect(d, 2, "--stop-after-claiming wants a decimal number, not '0x10'", "run",
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
	expect(d, 2, "status does not take --stop-after-claiming", "status", "--table", d->table,
	       "--ram", d->ram, "--stop-after-claiming", "1", NULL);
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
	char *argv[] = { PAGEHINTD, "run", "--table", d->table, "--ram", d->ram,
			 "--stop-after-claiming", "16384", NULL };
	char err[4096] = "";

	assert_int_equal(run(init, err, sizeof(err)), 0);
	assert_int_equal(run(argv, err, sizeof(err)), 1);
	if (!strstr(err, "--stop-after-claiming 16384 is not a frame of the guest's RAM"))
		fail_msg("unexpected: %s", err);
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
	char errpath[128], err[4096] = "";
	posix_spawn_file_actions_t fa;
	int fd, status, waited_ms;
	ssize_t n = 0;
	pid_t pid;

	assert_int_equal(run(init, err, sizeof(err)), 0);
	snprintf(errpath, sizeof(errpath), "%s/stderr", d->path);
	fd = open(errpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd, 2);
	assert_int_equal(posix_spawn(&pid, PAGEHINTD, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	/* its first words come after setup, the handlers before */
	for (waited_ms = 0; !strstr(err, "volatile frames are kept"); waited_ms += 10) {
		if (waited_ms >= 30000 || waitpid(pid, &status, WNOHANG) == pid) {
			kill(pid, SIGKILL);
			fail_msg("pagehintd never started: %s", err);
		}
		usleep(10000);
		n = pread(fd, err, sizeof(err) - 1, 0);
		err[n > 0 ? n : 0] = 0;
	}
	kill(pid, SIGTERM);
	status = wait_exit(pid);
	close(fd);
	unlink(errpath);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
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
	};

	return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
