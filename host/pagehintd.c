// SPDX-License-Identifier: GPL-2.0
/*
 * pagehintd - give a guest's unused memory back to the host.
 *
 * The guest keeps one state byte per page frame in a table it shares with
 * the host (<linux/pagehint.h>, docs/protocol.md).  pagehintd maps that
 * table and the file behind the guest's RAM, and punches the frames the
 * guest marked unused out of the file, so the host holds only what the
 * guest uses.  Given a target size, it also punches out frames the guest
 * marked volatile (clean cache it can read again) until the host holds no
 * more than the target.  It never touches a stable frame.
 *
 * Its commands and options: options_doc[] and commands[] below (--help,
 * pagehintd(8)).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "domxml.h"
#include "giveback.h"
#include "host.h"
#include "log.h"
#include "metrics.h"
#include "qmp.h"
#include "service.h"
#include "table.h"

#define MiB		(1ULL << 20)
/* 16 TiB of guest RAM, and an hour: beyond them a number is a typo */
#define MAX_MEM_MIB	(16UL << 20)
#define MAX_MS		3600000UL
#define MAX_PFN		(MAX_MEM_MIB << 8)	/* 4 KiB frames in MAX_MEM_MIB */
/*
 * A guest decides how many fallocate() calls its frees cost the host: a
 * checkerboard of unused frames costs one call per frame.  470,000 calls
 * a second filled a core; 20,000 a second is a few percent of one, and
 * about twice what our busiest test guest (the volatile page cache under
 * --chaos) asked for in its busiest second: 11,149.
 */
#define DEFAULT_PUNCHES_S	20000UL
/*
 * Metrics count every frame's state, a read of the whole table (16 MiB
 * for 64 GiB of guest): as often as Prometheus usually scrapes, no more.
 */
#define DEFAULT_METRICS_MS	15000UL
#define MAX_PUNCHES_S		10000000UL
/*
 * Host mode's per-guest budget of table reads: 65536 chunks a second is
 * the table of a 128 GiB guest read once a second, about 1% of a core;
 * and the most one pass may spend, a tenth of a second's worth, so that
 * one guest's pass is short beside the others'.
 */
#define DEFAULT_HOST_READS_S	65536UL
#define HOST_BURST_DIV		10
/* host mode: an idle guest's aged passes back off to this many times the pace */
#define HOST_IDLE_FACTOR	16

enum policy { POLICY_IMMEDIATE, POLICY_PERIODIC, POLICY_AGED };

/*
 * The aged policy looks AGE_PASSES times per --age-ms (every 10 ms at
 * most), and gives back a frame that has been unused for that many passes.
 */
#define AGE_PASSES		16
#define MIN_AGE_INTERVAL_MS	10

/*
 * The immediate policy passes every IMMEDIATE_MS while the guest changes
 * something, and waits twice as long after each pass that found nothing
 * changed, up to IMMEDIATE_IDLE_MS: an idle guest wakes the daemon a few
 * times a second, and what it frees next is still back within that.
 */
#define IMMEDIATE_MS		10
#define IMMEDIATE_IDLE_MS	160

struct options {
	const char *table, *ram, *qmp;
	const char *connect;		/* host: libvirt's URI */
	const char *memory_backing_dir;	/* host: qemu.conf's, NULL: not set */
	const char *libvirt_run_dir;	/* host: where libvirt keeps QEMU's pid files */
	const char *name;		/* the guest's, in metrics; NULL: its table's path */
	const char *metrics_file;	/* NULL: no metrics */
	unsigned long metrics_ms;	/* between two writes of metrics_file */
	unsigned long mem_mib;
	enum policy policy;
	unsigned long interval_ms;	/* periodic: between passes */
	unsigned long age_ms;		/* aged: how long a frame stays unused first */
	unsigned long rate_mib_s;	/* 0: unlimited */
	unsigned long max_punches_s;	/* fallocate() calls a second, at most */
	unsigned long max_reads_s;	/* chunks of the table read a second; 0: no limit */
	unsigned long status_ms;	/* 0: no status */
	long target_mib;		/* -1: none, volatile frames are kept */
	unsigned long budget_mib;	/* host: what all guests may hold; 0: no budget */
	const char *target_file;	/* re-read on SIGHUP */
	int chaos;			/* drop unused and volatile at once */
	int force;			/* init: reuse existing files */
	int json;
#ifdef PAGEHINTD_TEST_HOOKS
	int stop_after_claiming;	/* stop_pfn is set */
#endif
};

static volatile sig_atomic_t stopping, reread_target;

#ifdef PAGEHINTD_TEST_HOOKS
/*
 * Test hooks: only in the test build (-DPAGEHINTD_TEST_HOOKS, built in
 * build/host/test-hooks), never in the pagehintd that is installed.
 */

/* --stop-after-claiming: the frame, and whether the daemon stopped yet */
static uint64_t stop_pfn;
static bool stopped_once;

/*
 * For tests of a host that stops in the middle of a drop (a debugger, a
 * SIGSTOP, a host swapping the daemon out): stop once, holding the claim
 * on volatile frame @stop_pfn and on the rest of its run, until SIGCONT.
 * The guest spins on any of these frames meanwhile and must say so.  Only
 * a volatile claim: the test reads the frame's page, and an unused claim
 * would stop the daemon for a frame the test is not waiting for.
 */
static void stop_when_claimed(struct table *t, uint8_t want, uint64_t pfn, uint64_t len)
{
	(void)t;
	if (stopped_once || want != PAGEHINT_VOLATILE || stop_pfn < pfn || stop_pfn - pfn >= len)
		return;
	stopped_once = true;
	log_line(LOG_NOTICE, "stopping with frames %" PRIu64 "-%" PRIu64
		 " claimed (--stop-after-claiming %" PRIu64 ")", pfn, pfn + len - 1, stop_pfn);
	raise(SIGSTOP);
	log_line(LOG_NOTICE, "continued; releasing frames %" PRIu64 "-%" PRIu64,
		 pfn, pfn + len - 1);
}
#endif

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reread_target = 1;
	else
		stopping = 1;
}

/* The target file holds a number of MiB, or "none". */
static int read_target_file(const char *path, long *target_mib)
{
	char buf[64], *end;
	unsigned long v;
	struct stat st;
	ssize_t n;
	int fd;

	/* non-blocking: a FIFO must not stop the daemon before fstat says no */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		log_line(LOG_ERR, "cannot read target file %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		log_line(LOG_ERR, "target file %s is not a regular file", path);
		close(fd);
		return -1;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, " \t\n")] = 0;
	if (!strcmp(buf, "none")) {
		*target_mib = -1;
		return 0;
	}
	errno = 0;
	v = strtoul(buf, &end, 10);
	if (errno || !buf[0] || *end || buf[0] == '-' || v > LONG_MAX / MiB) {
		log_line(LOG_WARNING, "target file %s holds '%s', not a number of MiB or \"none\"; target unchanged",
			 path, buf);
		return -1;
	}
	*target_mib = v;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double frames_mib(uint64_t frames)
{
	return frames * 4096.0 / MiB;
}

/*
 * One status report.  The frame counts come from the table's state bytes
 * and the guest's totals from the header: both are what the guest wrote.
 * The host's totals are this daemon's own (run), or, for "status", the
 * copy a daemon published in the header, which the guest can overwrite:
 * the JSON says which ("host_from").
 */
static void report(const struct table *t, int json, double since, bool own)
{
	const struct pagehint_header *h = t->hdr;
	struct table_counts c;
	uint64_t host[4];

	if (own) {
		host[0] = t->host.dropped_unused;
		host[1] = t->host.dropped_volatile;
		host[2] = t->host.punch_calls;
		host[3] = t->host.cas_lost;
	} else {
		host[0] = le64toh(h->host.dropped_unused);
		host[1] = le64toh(h->host.dropped_volatile);
		host[2] = le64toh(h->host.punch_calls);
		host[3] = le64toh(h->host.cas_lost);
	}
	table_count(t, &c);
	if (json) {
		printf("{\"time\": %.3f, \"attached\": %s, \"frames\": {\"stable\": %llu, "
		       "\"unused\": %llu, \"unused_dropped\": %llu, \"volatile\": %llu, "
		       "\"volatile_dropped\": %llu, \"busy\": %llu}, \"resident_mib\": %.1f, "
		       "\"dropped\": {\"unused\": %llu, \"volatile\": %llu, \"punch_calls\": %llu, "
		       "\"guest_won\": %llu}, \"host_from\": \"%s\", "
		       "\"guest\": {\"to_unused\": %llu, \"to_stable\": %llu, "
		       "\"busy_waits\": %llu, \"frames_unused\": %llu}}\n",
		       now_s() - since, table_attached(t) ? "true" : "false",
		       (unsigned long long)c.stable, (unsigned long long)c.unused,
		       (unsigned long long)c.unused_dropped, (unsigned long long)c.volatile_,
		       (unsigned long long)c.volatile_dropped, (unsigned long long)c.busy,
		       ram_resident(t) / (double)MiB,
		       (unsigned long long)host[0], (unsigned long long)host[1],
		       (unsigned long long)host[2], (unsigned long long)host[3],
		       own ? "this pagehintd" : "the table header, which the guest can write",
		       (unsigned long long)le64toh(h->guest.to_unused),
		       (unsigned long long)le64toh(h->guest.to_stable),
		       (unsigned long long)le64toh(h->guest.busy_waits),
		       (unsigned long long)le64toh(h->guest.frames_unused));
	} else {
		printf("pagehintd: %-8s stable %7.1f MiB  unused %7.1f MiB (%7.1f given back)  "
		       "volatile %7.1f MiB (%7.1f given back)  host holds %7.1f MiB\n",
		       table_attached(t) ? "attached" : "waiting",
		       frames_mib(c.stable), frames_mib(c.unused + c.unused_dropped),
		       frames_mib(c.unused_dropped), frames_mib(c.volatile_ + c.volatile_dropped),
		       frames_mib(c.volatile_dropped), ram_resident(t) / (double)MiB);
	}
	fflush(stdout);
}

/*
 * QEMU runs the guest with -action reboot=shutdown,shutdown=pause, so a
 * guest that reboots or powers off stops before running another
 * instruction.  That action applies to every reset request, including
 * an operator's system_reset and our own, which QEMU would turn into one
 * more stop.  For a reboot, start a new table epoch while the guest is
 * stopped, then switch the action to a real reset for the one reset we
 * ask for, switch it back once QEMU reports the reset, and resume: the
 * new boot cannot touch a frame that the old one had left unused before
 * the host stops acting on it.
 */
#define REBOOT_STOPS	"{\"reboot\": \"shutdown\", \"shutdown\": \"pause\"}"
#define REBOOT_RESETS	"{\"reboot\": \"reset\"}"

/*
 * Where a reboot stands, and the ids of the commands it sent (0: none;
 * QMP ids start at 1, and a reply without an id matches none of them).
 */
struct reboot {
	bool resetting;		/* "cont" is refused until the reset happened */
	/*
	 * A boot attached to the current epoch, as far as the daemon saw.
	 * A guest detaches when it shuts down, so at its reboot stop the
	 * table no longer says whether a boot used it.
	 */
	bool epoch_used;
	long long set_action_id, reset_id, cont_id;
};

/* Send a command the reboot cannot do without; 0 when it could not be sent. */
static long long reboot_command(struct qmp *q, const char *command, const char *arguments)
{
	long long id = qmp_execute(q, command, arguments);

	if (id < 0) {
		log_line(LOG_ERR, "could not send %s to QEMU (%s); the guest stays stopped",
			 command, strerror(errno));
		return 0;
	}
	return id;
}

/*
 * The guest is stopped in a reboot: void the table (if a boot had attached
 * to it) and ask for the reset that starts the new boot.
 */
static int start_reboot(struct table *t, struct qmp *q, struct reboot *r, const char *why)
{
	/*
	 * A stop that comes before the boot we resumed has attached (the old
	 * boot's second way, pending while we reset) needs no new epoch: the
	 * host does nothing with a table nobody has attached to.
	 */
	if (r->epoch_used || table_attached(t)) {
		table_reset(t);
		r->epoch_used = false;
		log_line(LOG_NOTICE, "%s: new table epoch, resuming it", why);
	} else {
		log_line(LOG_NOTICE, "%s before it attached: resuming it", why);
	}
	r->resetting = true;
	r->set_action_id = reboot_command(q, "set-action", REBOOT_RESETS);
	r->reset_id = r->set_action_id ? reboot_command(q, "system_reset", NULL) : 0;
	return r->reset_id ? 0 : -1;
}

/* The reset happened: reboots stop the guest again, and it runs on. */
static int resume(struct qmp *q, struct reboot *r)
{
	r->resetting = false;
	r->set_action_id = reboot_command(q, "set-action", REBOOT_STOPS);
	r->cont_id = r->set_action_id ? reboot_command(q, "cont", NULL) : 0;
	return r->cont_id ? 0 : -1;
}

static bool is_reboot_stop(const struct qmp_message *m)
{
	return !strcmp(m->event, "SHUTDOWN") &&
	       (!strcmp(m->reason, "guest-reset") || !strcmp(m->reason, "host-qmp-system-reset"));
}

/*
 * Act on what QEMU sent.  Returns 0; 1 when QEMU closed the socket (it
 * quit: the daemon's work is done); or -1 when QEMU refused, or could not
 * be sent, a command a reboot needs, so that the daemon exits with a
 * message that says why the guest stays stopped instead of waiting for a
 * reset that will not come.
 */
static int handle_qmp(struct table *t, struct qmp *q, struct reboot *r, int timeout_ms)
{
	struct qmp_message m;
	const char *line;
	int eof;

	/* a peer that floods us with events while it reads nothing is dropped */
	while (!qmp_stalled(q, qmp_now_ms()) && (line = qmp_next_line(q, timeout_ms, &eof))) {
		timeout_ms = 0;
		switch (qmp_parse(line, &m)) {
		case QMP_ERROR:
			if (m.id > 0 && (m.id == r->set_action_id || m.id == r->reset_id ||
					 m.id == r->cont_id)) {
				log_line(LOG_ERR, "QEMU refused the %s for the guest's reboot: %s; the guest stays stopped",
					 m.id == r->reset_id ? "system_reset" :
					 m.id == r->cont_id ? "cont" : "set-action", m.error);
				return -1;
			}
			log_line(LOG_WARNING, "QEMU refused command %lld: %s", m.id, m.error);
			continue;
		case QMP_EVENT:
			break;
		default:
			continue;
		}
		if (is_reboot_stop(&m)) {
			/*
			 * A guest's reboot may try a second way before it has
			 * stopped (ACPI, then the keyboard controller): the
			 * reset we asked for covers that stop too.  Asking
			 * again would only reset the new boot once more.
			 */
			if (!r->resetting && start_reboot(t, q, r, "guest reboots"))
				return -1;
		} else if (!strcmp(m.event, "RESET") && r->resetting) {
			if (resume(q, r))
				return -1;
		} else if (!strcmp(m.event, "SHUTDOWN") &&
			   (!strcmp(m.reason, "guest-shutdown") || !strcmp(m.reason, "guest-panic"))) {
			log_line(LOG_NOTICE, "guest powered off: stopping QEMU");
			qmp_execute(q, "quit", NULL);
		} else if (!strcmp(m.event, "RESET")) {
			/* a reset that did not stop first: the new boot may already run */
			table_reset(t);
			log_line(LOG_WARNING, "unexpected guest reset (%s): new table epoch",
				 m.reason);
		}
	}
	if (eof)
		log_line(LOG_NOTICE, "QEMU closed its QMP socket; exiting");
	return eof ? 1 : 0;
}

/*
 * Before the first pass: reboots stop the guest (a daemon killed in the
 * middle of a reboot may have left the action at reset), and a guest that
 * a dead predecessor left in the middle of a reboot runs on: stopped
 * before its reset ("shutdown"), it gets its new epoch and its reset;
 * reset but not resumed ("prelaunch"), it is resumed.  Events that come
 * meanwhile wait in q for the loop.
 */
static int qmp_setup(struct table *t, struct qmp *q, struct reboot *r)
{
	struct qmp_message m;

	if (qmp_command(q, "set-action", REBOOT_STOPS, 5000, &m) != QMP_RETURN) {
		log_line(LOG_ERR, "QEMU refused set-action: %s",
			 m.kind == QMP_ERROR ? m.error : "no reply");
		return -1;
	}
	if (qmp_command(q, "query-status", NULL, 5000, &m) != QMP_RETURN) {
		log_line(LOG_ERR, "QEMU refused query-status: %s",
			 m.kind == QMP_ERROR ? m.error : "no reply");
		return -1;
	}
	if (!strcmp(m.status, "shutdown")) {
		/* whether a boot used the epoch is not known here: assume it did */
		r->epoch_used = true;
		return start_reboot(t, q, r, "the guest was left stopped in a reboot");
	}
	if (!strcmp(m.status, "prelaunch")) {
		log_line(LOG_NOTICE, "the guest was left reset but not resumed: resuming it");
		return resume(q, r);
	}
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/*
 * What a guest may make the daemon spend, and its pace, from the options:
 * a pass every --interval-ms (periodic), AGE_PASSES per --age-ms (aged),
 * or, immediate, every IMMEDIATE_MS while the guest changes something and
 * twice as long after each pass that found nothing changed, up to
 * IMMEDIATE_IDLE_MS (--chaos: every millisecond).  At most 1/@burst_div
 * of a second's budget in one pass.  Returns the pass interval of the
 * periodic and aged policies (the aged policy counts ages in passes), 0
 * for immediate.
 */
static unsigned long policy_limits(const struct options *o, unsigned int burst_div,
				   struct service_limits *l)
{
	unsigned long pass_ms = o->policy == POLICY_PERIODIC ? o->interval_ms :
				o->policy == POLICY_AGED ? o->age_ms / AGE_PASSES : 0;

	if (o->policy == POLICY_AGED && pass_ms < MIN_AGE_INTERVAL_MS)
		pass_ms = MIN_AGE_INTERVAL_MS;
	l->reads_s = o->max_reads_s;
	l->punches_s = o->max_punches_s;
	l->frames_s = o->rate_mib_s * (MiB / 4096);
	l->burst_div = burst_div;
	if (pass_ms) {
		l->min_pass_ns = l->max_pass_ns = pass_ms * NSEC_PER_MSEC;
	} else if (o->chaos) {
		l->min_pass_ns = l->max_pass_ns = NSEC_PER_MSEC;
	} else {
		l->min_pass_ns = IMMEDIATE_MS * NSEC_PER_MSEC;
		l->max_pass_ns = IMMEDIATE_IDLE_MS * NSEC_PER_MSEC;
	}
	return pass_ms;
}

static void report_target(long target_mib)
{
	if (target_mib < 0)
		log_line(LOG_INFO, "no target: volatile frames are kept");
	else
		log_line(LOG_INFO, "target %ld MiB: volatile frames go while above it",
			 target_mib);
}

/*
 * Say when the guest attaches and detaches (kexec, shutdown, removal of
 * the device: the host gives nothing back meanwhile).  The epochs are the
 * guest's to write, so at most one line a second: a guest that flips them
 * gets its last state logged, not every flip.
 */
static void report_attach(const struct table *t, struct reboot *r, double now)
{
	static double last;
	static int logged = -1;
	int attached = table_attached(t);

	if (attached)
		r->epoch_used = true;
	if (attached == logged || (logged >= 0 && now - last < 1))
		return;
	if (attached)
		log_line(LOG_NOTICE, "the guest attached");
	else if (logged >= 0)
		log_line(LOG_NOTICE, "the guest detached: nothing is given back until it attaches again");
	logged = attached;
	last = now;
}

/*
 * Under systemd with WatchdogSec=, how often the service loop says it
 * still runs: twice per period, as sd_watchdog_enabled(3) advises.  0:
 * no watchdog.
 */
static unsigned long watchdog_ping_ms(void)
{
	uint64_t usec;

	if (sd_watchdog_enabled(0, &usec) <= 0)
		return 0;
	return usec / 2000 ? usec / 2000 : 1;
}

/*
 * Replace the metrics file with what the guest and the daemon look like
 * now.  A failure (a full disk, a directory that went away) is said once,
 * and so is the first success after it: the daemon serves on either way.
 */
static void write_metrics(const struct options *o, const struct table *t, long target_mib)
{
	static bool failing;
	struct guest_metrics m;

	metrics_snapshot(&m, t, o->name ? o->name : o->table,
			 target_mib < 0 ? -1 : target_mib * (long long)MiB);
	if (metrics_write(o->metrics_file, &m, 1)) {
		if (!failing)
			log_line(LOG_WARNING, "cannot write metrics to %s: %s", o->metrics_file,
				 strerror(errno));
		failing = true;
	} else if (failing) {
		log_line(LOG_NOTICE, "metrics written to %s again", o->metrics_file);
		failing = false;
	}
}

static int cmd_run(const struct options *o)
{
	struct sigaction sa = { .sa_handler = on_signal };
	double start = now_s(), last_status = 0, last_ping = 0;
	double last_metrics = 0;
	unsigned long ping_ms = watchdog_ping_ms();
	char err[512];
	struct table opened, *t;
	struct service svc;
	struct service_limits limits;
	struct qmp q = { .fd = -1 };
	struct reboot reboot = { 0 };
	sigset_t signals, unblocked;
	int qmp_done = 0;
	long target_mib = o->chaos ? 0 : o->target_mib;
	unsigned long pass_ms = policy_limits(o, 1, &limits);
	int ret = 0;

	/*
	 * Handlers first: a SIGHUP or SIGTERM during setup must not kill the
	 * daemon midway.  A QEMU that closes its socket while we write to it
	 * is an error return and an exit with a message, not a silent death.
	 */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&signals);
	sigaddset(&signals, SIGINT);
	sigaddset(&signals, SIGTERM);
	sigaddset(&signals, SIGHUP);

	if (o->target_file && read_target_file(o->target_file, &target_mib))
		return 1;

	if (table_open(&opened, o->table, o->ram, err, sizeof(err))) {
		log_line(LOG_ERR, "%s", err);
		return 1;
	}
	if (o->qmp && qmp_connect(&q, o->qmp, err, sizeof(err))) {
		log_line(LOG_ERR, "%s", err);
		table_close(&opened);
		return 1;
	}
	/*
	 * A guest CPU spins, perhaps with interrupts off, while the daemon
	 * holds one of its frames: between claim and release the daemon must
	 * not wait for its own pages to come back from swap.
	 */
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		log_line(LOG_WARNING, "cannot lock its memory (%s): a guest may wait on its page-ins",
			 strerror(errno));
	table_recover_busy(&opened);
	if (service_init(&svc, &opened, o->policy == POLICY_AGED,
			 o->policy == POLICY_AGED ? o->age_ms / pass_ms : 0, &limits, now_ns())) {
		log_line(LOG_ERR, "no memory for what it keeps between passes");
		table_close(&opened);
		return 1;
	}
	t = &svc.t;
	if (o->policy == POLICY_AGED)
		log_line(LOG_INFO, "policy aged: a frame goes back once it stayed unused for %lu ms",
			 o->age_ms);
	else if (o->policy == POLICY_PERIODIC)
		log_line(LOG_INFO, "policy periodic: a pass every %lu ms", o->interval_ms);
	else
		log_line(LOG_INFO, "policy immediate%s", o->chaos ? ", chaos" : "");
#ifdef PAGEHINTD_TEST_HOOKS
	if (o->stop_after_claiming) {
		if (!table_has_frame(t, stop_pfn)) {
			log_line(LOG_ERR, "--stop-after-claiming %" PRIu64
				 " is not a frame of the guest's RAM", stop_pfn);
			service_free(&svc);
			return 1;
		}
		t->claimed = stop_when_claimed;
	}
#endif
	/* before QMP: a boot attached already has used this epoch */
	report_attach(t, &reboot, now_s());
	if (o->qmp && qmp_setup(t, &q, &reboot)) {
		qmp_close(&q);
		service_free(&svc);
		return 1;
	}
	if (o->chaos)
		log_line(LOG_INFO, "chaos mode: every unused and volatile frame goes at once");
	else
		report_target(target_mib);
	/*
	 * It serves from here on: systemd (Type=notify) starts what is
	 * ordered after it, and counts a start that never gets here as
	 * failed.  Without NOTIFY_SOCKET this does nothing.
	 */
	sd_notify(0, "READY=1");

	while (!stopping) {
		double now = now_s();
		uint64_t now_n = now_ns();
		int wait_ms;

		if (ping_ms && now - last_ping >= ping_ms / 1000.0) {
			sd_notify(0, "WATCHDOG=1");
			last_ping = now;
		}
		if (reread_target) {
			reread_target = 0;
			if (o->target_file && !read_target_file(o->target_file, &target_mib))
				report_target(target_mib);
		}
		report_attach(t, &reboot, now);
		if (service_due(&svc, now_n)) {
			struct giveback_pass done;

			svc.target_bytes = target_mib < 0 ? GIVEBACK_NO_TARGET :
					   target_mib * (long long)MiB;
			if (service_pass(&svc, now_n, &stopping, &done)) {
				log_line(LOG_ERR, "fallocate(PUNCH_HOLE) on %s failed: %s",
					 o->ram, strerror(errno));
				ret = 1;
				break;
			}
		}
		/* the next pass, in whole milliseconds: at least one */
		wait_ms = svc.next_pass_ns > now_n ?
			  (svc.next_pass_ns - now_n + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC : 1;
		if (o->status_ms && now - last_status >= o->status_ms / 1000.0) {
			report(t, o->json, start, true);
			last_status = now;
		}
		if (o->metrics_file && now - last_metrics >= o->metrics_ms / 1000.0) {
			write_metrics(o, t, target_mib);
			last_metrics = now;
		}
		if (o->status_ms && wait_ms > (int)o->status_ms)
			wait_ms = o->status_ms;
		if (o->metrics_file && wait_ms > (int)o->metrics_ms)
			wait_ms = o->metrics_ms;
		/* a periodic pass an hour apart must not miss the watchdog */
		if (ping_ms && wait_ms > (int)ping_ms)
			wait_ms = ping_ms;
		/*
		 * Wait with the signals blocked until the wait itself (ppoll)
		 * unblocks them: one that comes after the checks above ends
		 * the wait instead of being seen an interval later.
		 */
		sigprocmask(SIG_BLOCK, &signals, &unblocked);
		if (!stopping && !reread_target) {
			if (q.fd >= 0) {
				q.wait_mask = &unblocked;
				qmp_done = handle_qmp(t, &q, &reboot,
						      qmp_wait_bound_ms(&q, qmp_now_ms(), wait_ms));
				q.wait_mask = NULL;
			} else {
				struct timespec ts = { wait_ms / 1000, wait_ms % 1000 * 1000000L };

				ppoll(NULL, 0, &ts, &unblocked);
			}
		}
		sigprocmask(SIG_SETMASK, &unblocked, NULL);
		/*
		 * Without its commands a guest's reboot stays stopped: say
		 * why, rather than serve on with a QEMU that reads nothing.
		 */
		if (!qmp_done && q.fd >= 0 && qmp_stalled(&q, qmp_now_ms())) {
			if (q.out_full)
				log_line(LOG_ERR, "QEMU stopped reading its QMP socket: %zu bytes of commands could not be sent, and the next did not fit; dropping the connection",
					 q.out_len);
			else
				log_line(LOG_ERR, "QEMU stopped reading its QMP socket: %zu bytes of commands could not be sent for %d s; dropping the connection",
					 q.out_len, QMP_DRAIN_MS / 1000);
			qmp_done = -1;
		}
		if (qmp_done) {
			ret = qmp_done < 0;
			break;
		}
	}
	sd_notify(0, "STOPPING=1");
	/* a guest nobody serves has no metrics: not the last ones, forever */
	if (o->metrics_file)
		unlink(o->metrics_file);
	if (o->status_ms)
		report(t, o->json, start, true);
	qmp_close(&q);
	service_free(&svc);
	return ret;
}

/*
 * Every hinted libvirt domain: each policy's budget and pace as run's,
 * less per pass (HOST_BURST_DIV), idle passes backing off, and a read
 * budget by default.
 */
static int cmd_host(const struct options *o)
{
	struct host_options h = {
		.uri = o->connect ? o->connect : HOST_DEFAULT_URI,
		.run_dir = o->libvirt_run_dir ? o->libvirt_run_dir : HOST_DEFAULT_RUN_DIR,
		.conf = { .memory_backing_dir = o->memory_backing_dir },
		.default_target_mib = o->target_mib,
		.budget_bytes = (uint64_t)o->budget_mib * MiB,
		.status_ms = o->status_ms,
		.watchdog_ms = watchdog_ping_ms(),
		.metrics_file = o->metrics_file,
		.metrics_ms = o->metrics_ms,
	};
	struct options p = *o;
	unsigned long pass_ms;

	if (!p.max_reads_s)
		p.max_reads_s = DEFAULT_HOST_READS_S;
	p.policy = POLICY_IMMEDIATE;
	policy_limits(&p, HOST_BURST_DIV, &h.immediate);
	p.policy = POLICY_PERIODIC;
	policy_limits(&p, HOST_BURST_DIV, &h.periodic);
	p.policy = POLICY_AGED;
	pass_ms = policy_limits(&p, HOST_BURST_DIV, &h.aged);
	/* a pass that reads nothing leaves no frame ageing: it may wait longer */
	h.aged.max_pass_ns = h.aged.min_pass_ns * HOST_IDLE_FACTOR;
	h.age_passes = o->age_ms / pass_ms;
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		log_line(LOG_WARNING, "cannot lock its memory (%s): a guest may wait on its page-ins",
			 strerror(errno));
	return host_run(&h, &stopping);
}

/* libvirt hands a hook the domain's XML; one this large is not a domain */
#define HOOK_MAX_XML	(16 << 20)

/*
 * libvirt's qemu hook, run as "<hooks>/qemu.d/pagehint NAME OP SUBOP
 * EXTRA" with the domain's XML on stdin.  At "start begin" libvirt has
 * labelled the domain's resources and QEMU is not yet running: the time
 * to make the table a guest's driver finds at boot, owned by whom QEMU
 * runs as.  Every other call, and every domain not wired for pagehint,
 * is left alone.  A table that cannot be prepared fails the start (libvirt
 * shows this message): a guest booted on another domain's table, or on a
 * stale one, would have its memory given back on that table's word.
 */
static int cmd_libvirt_hook(int argc, char **argv)
{
	struct domxml_domain d;
	size_t len = 0, cap = 0;
	char err[512], *xml = NULL;
	bool prepares;
	ssize_t n;
	int ret = 0;

	if (argc != 4) {
		log_line(LOG_ERR, "libvirt-hook takes NAME OP SUBOP EXTRA, as libvirt calls hooks");
		return 2;
	}
	/* a failure of any other call must not stop libvirt doing it */
	prepares = !strcmp(argv[1], "start") && !strcmp(argv[2], "begin");
	/* libvirt writes the XML for every call: read it all, whether used or not */
	do {
		if (len == cap) {
			char *more = cap < HOOK_MAX_XML ? realloc(xml, cap + 65536) : NULL;

			if (!more) {
				log_line(LOG_ERR, "domain %s: its XML is over %d bytes", argv[0],
					 HOOK_MAX_XML);
				free(xml);
				return prepares ? 1 : 0;
			}
			xml = more;
			cap += 65536;
		}
		n = read(STDIN_FILENO, xml + len, cap - len);
		if (n > 0)
			len += n;
	} while (n > 0 || (n < 0 && errno == EINTR));
	if (n < 0) {
		log_line(LOG_ERR, "domain %s: cannot read its XML: %s", argv[0], strerror(errno));
		free(xml);
		return prepares ? 1 : 0;
	}
	if (!prepares)
		goto out;
	switch (domxml_read(xml, len, &(struct domxml_conf){ NULL }, &d)) {
	case DOMXML_NOT_WIRED:
		break;
	case DOMXML_REFUSE:
		log_line(LOG_WARNING, "domain %s: no pagehint table prepared: %s", argv[0], d.why);
		break;
	case DOMXML_SERVE:
		if (table_prepare(d.table_path, d.ram_bytes, d.shmem_bytes,
				  d.has_owner ? d.owner_uid : (uid_t)-1,
				  d.has_owner ? d.owner_gid : (gid_t)-1, err, sizeof(err))) {
			log_line(LOG_ERR, "domain %s: %s", argv[0], err);
			ret = 1;
		} else {
			log_line(LOG_INFO, "domain %s: table %s prepared", argv[0], d.table_path);
		}
		break;
	}
out:
	free(xml);
	return ret;
}

static int cmd_status(const struct options *o)
{
	char err[512];
	struct table t;

	if (table_open_readonly(&t, o->table, o->ram, err, sizeof(err))) {
		log_line(LOG_ERR, "%s", err);
		return 1;
	}
	report(&t, o->json, now_s(), false);
	table_close(&t);
	return 0;
}

static int cmd_init(const struct options *o)
{
	char err[512];

	if (table_create(o->table, o->ram, o->mem_mib * MiB, o->force, err, sizeof(err))) {
		log_line(LOG_ERR, "%s", err);
		return 1;
	}
	return 0;
}

/*
 * Every option, once: getopt's table, --help and the check of which
 * command takes which option are all made from this list and commands[].
 */
static const struct option_doc {
	const char *name;
	int val;		/* getopt's value, as commands[] names it */
	const char *arg;	/* the argument's name in --help; NULL: takes none */
	const char *help;	/* lines of at most 56 characters */
} options_doc[] = {
	{ "table", 't', "FILE", "the page-state table file the guest shares (its\n"
				 "ivshmem-plain device's memory-backend-file)" },
	{ "ram", 'r', "FILE", "the file behind the guest's RAM (its memory backend,\n"
			       "share=on); init makes it with the table, a pair" },
	{ "mem-mib", 'm', "N", "the guest's RAM in MiB" },
	{ "force", 'f', NULL, "init: reuse existing files of the caller's own, for\n"
			       "a guest that is not running" },
	{ "qmp", 'q', "SOCKET", "QEMU's QMP socket: follow the guest's reboots, so\n"
				 "that each boot starts a new table epoch" },
	{ "policy", 'p', "POLICY", "aged (the default): give a frame back once it\n"
				    "stayed unused for --age-ms; immediate: at once;\n"
				    "periodic: a pass every --interval-ms" },
	{ "interval-ms", 'i', "N", "periodic: milliseconds between passes (1000)" },
	{ "age-ms", 'a', "N", "aged: how long a frame stays unused before it goes\n"
			       "(2000)" },
	{ "rate-mib-s", 'l', "N", "give back at most N MiB a second (no limit)" },
	{ "max-punches-s", 'P', "N", "at most N fallocate() calls a second (20000)" },
	{ "max-reads-s", 'R', "N", "read at most N chunks (2 MiB of guest each) of the\n"
				    "table a second (no limit)" },
	{ "status-ms", 's', "N", "print frames per state and host-resident MiB on\n"
				  "stdout every N ms (0: never, the default)" },
	{ "json", 'j', NULL, "status lines as JSON, one object a line" },
	{ "name", 'n', "NAME", "the guest's name in metrics (by default its table's\n"
				 "path)" },
	{ "metrics-file", 'M', "FILE", "write Prometheus metrics to FILE (for node_exporter's\n"
					"textfile collector), replaced whole each time" },
	{ "metrics-ms", 'k', "N", "write them every N ms (15000)" },
	{ "target-mib", 'T', "N", "give back volatile frames (clean cache) while the\n"
				   "host holds more than N MiB of the guest" },
	{ "target-file", 'F', "FILE", "the target from FILE (MiB, or \"none\"), read again\n"
				       "on SIGHUP" },
	{ "budget-mib", 'B', "N", "host: the guests together hold at most N MiB: over\n"
				   "it, their oldest clean cache goes first, each\n"
				   "domain's floor_mib and weight respected" },
	{ "connect", 'c', "URI", "host: libvirt's URI (qemu:///system)" },
	{ "memory-backing-dir", 'D', "DIR", "host: memory_backing_dir as qemu.conf sets it, where\n"
					     "QEMU's RAM files are (not set: libvirt's default)" },
	{ "libvirt-run-dir", 'L', "DIR", "host: where libvirt keeps QEMU's pid files\n"
					  "(/run/libvirt/qemu)" },
	{ "chaos", 'C', NULL, "for tests: drop every unused and volatile frame\n"
			       "the moment it appears" },
#ifdef PAGEHINTD_TEST_HOOKS
	{ "stop-after-claiming", 'S', "PFN", "test build only: stop (SIGSTOP) once, holding\n"
					      "the claim on volatile frame PFN" },
#endif
	{ "help", 'h', NULL, "this text" },
	{ "version", 'V', NULL, "the version" },
};

#define NR_OPTIONS	(sizeof(options_doc) / sizeof(options_doc[0]))

/*
 * The commands, the options each must have and those it may take, by
 * their getopt values.
 */
static const struct command_doc {
	const char *cmd, *needs, *takes, *help;
	const char *args;	/* positional arguments, for the synopsis */
} commands[] = {
	{ "init", "trm", "f", "create a guest's RAM and table files (0600, never\n"
			      "through a symbolic link)", NULL },
	{ "run", "tr", "qpialPRsjnMkTFCS", "serve the guest: give its unused frames back to\n"
				      "the host until SIGTERM or SIGINT", NULL },
	{ "host", "", "cDLialPRsTMkB", "serve every hinted libvirt domain of the host,\n"
				  "following libvirt's events, until SIGTERM or SIGINT", NULL },
	{ "status", "tr", "j", "one status report, beside a running daemon", NULL },
	{ "libvirt-hook", "", "", "libvirt's qemu hook, the domain's XML on stdin:\n"
				  "prepares a hinted domain's table before its QEMU\n"
				  "starts", "NAME OP SUBOP EXTRA" },
	{ "table-size", "m", "", "the bytes of table a guest of --mem-mib needs", NULL },
};

#define NR_COMMANDS	(sizeof(commands) / sizeof(commands[0]))

static const struct option_doc *option_by_val(int val)
{
	unsigned int i;

	for (i = 0; i < NR_OPTIONS; i++)
		if (options_doc[i].val == val)
			return &options_doc[i];
	return NULL;
}

/* "usage: pagehintd table-size": where a command's options start */
#define SYNOPSIS_INDENT	27

/* One option as the synopsis shows it, optional ones in brackets. */
static int synopsis_option(FILE *f, int val, bool optional, int column)
{
	const struct option_doc *d = option_by_val(val);
	char word[64];
	int n;

	if (!d)			/* a test hook this build has not */
		return column;
	n = snprintf(word, sizeof(word), "%s--%s%s%s%s", optional ? "[" : "", d->name,
		     d->arg ? " " : "", d->arg ? d->arg : "", optional ? "]" : "");
	if (column + 1 + n > 79) {
		fprintf(f, "\n%*s", SYNOPSIS_INDENT, "");
		column = SYNOPSIS_INDENT;
	}
	fprintf(f, " %s", word);
	return column + 1 + n;
}

/* Print TEXT's lines, the first after what is already printed, the rest at INDENT. */
static void print_lines(FILE *f, const char *text, int indent)
{
	const char *nl;

	while ((nl = strchr(text, '\n'))) {
		fprintf(f, "%.*s\n%*s", (int)(nl - text), text, indent, "");
		text = nl + 1;
	}
	fprintf(f, "%s\n", text);
}

static void synopsis(FILE *f)
{
	unsigned int i;
	const char *v;
	int column;

	for (i = 0; i < NR_COMMANDS; i++) {
		column = fprintf(f, "%s pagehintd %-10s", i ? "      " : "usage:", commands[i].cmd);
		for (v = commands[i].needs; *v; v++)
			column = synopsis_option(f, *v, false, column);
		for (v = commands[i].takes; *v; v++)
			column = synopsis_option(f, *v, true, column);
		if (commands[i].args)
			fprintf(f, " %s", commands[i].args);
		fprintf(f, "\n");
	}
	fprintf(f, "       pagehintd --help | --version\n");
}

static void usage(FILE *f)
{
	synopsis(f);
	fprintf(f, "Try 'pagehintd --help' for what each option does.\n");
}

/* --help: every command and every option, from the tables above. */
static void help(void)
{
	unsigned int i;
	char word[48];

	synopsis(stdout);
	printf("\nGive a guest's unused memory back to the host: the guest marks each 4 KiB\n"
	       "frame stable, unused or volatile in a table it shares with the host, and\n"
	       "pagehintd punches unused frames (and volatile ones, under a target) out of\n"
	       "the file behind the guest's RAM.  See pagehintd(8).\n\nCommands:\n");
	for (i = 0; i < NR_COMMANDS; i++) {
		printf("  %-20s  ", commands[i].cmd);
		print_lines(stdout, commands[i].help, 24);
	}
	printf("\nOptions:\n");
	for (i = 0; i < NR_OPTIONS; i++) {
		snprintf(word, sizeof(word), "--%s%s%s", options_doc[i].name,
			 options_doc[i].arg ? " " : "", options_doc[i].arg ? options_doc[i].arg : "");
		if (strlen(word) > 20)
			printf("  %s\n%24s", word, "");
		else
			printf("  %-20s  ", word);
		print_lines(stdout, options_doc[i].help, 24);
	}
	printf("\nNumbers are decimal and range-checked.  Exit status: 0 done, 1 an error,\n"
	       "2 a usage error.\n");
}

/*
 * A decimal number of digits only (no sign, no space, no base prefix)
 * between min and max: the operator's typo gets a message, not a value
 * strtoul() made of it.
 */
static int parse_number(const char *arg, const char *name, unsigned long min,
			unsigned long max, unsigned long *out)
{
	unsigned long v = 0;
	const char *p;

	for (p = arg; *p >= '0' && *p <= '9'; p++) {
		if (v > (ULONG_MAX - (*p - '0')) / 10) {
			v = ULONG_MAX;	/* too large, whatever follows */
			continue;
		}
		v = v * 10 + (*p - '0');
	}
	if (!*arg || *p) {
		log_line(LOG_ERR, "--%s wants a decimal number, not '%s'", name, arg);
		return -1;
	}
	if (v < min || v > max) {
		log_line(LOG_ERR, "--%s %s is out of range (%lu to %lu)", name, arg,
			 min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	struct option longopts[NR_OPTIONS + 1] = { };
	struct options o = { .policy = POLICY_AGED, .interval_ms = 1000, .age_ms = 2000,
			     .target_mib = -1, .max_punches_s = DEFAULT_PUNCHES_S,
			     .metrics_ms = DEFAULT_METRICS_MS };
	bool policy_given = false;
	const struct command_doc *command = NULL;
	const char *cmd;
	unsigned long target;
	unsigned int i;
	int c, opt;

	log_init();
	for (i = 0; i < NR_OPTIONS; i++) {
		longopts[i].name = options_doc[i].name;
		longopts[i].has_arg = options_doc[i].arg ? required_argument : no_argument;
		longopts[i].val = options_doc[i].val;
	}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		help();
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("pagehintd %s\n", PAGEHINTD_VERSION);
		return 0;
	}
	cmd = argv[1];
	for (i = 0; i < NR_COMMANDS; i++)
		if (!strcmp(cmd, commands[i].cmd))
			command = &commands[i];
	if (!command) {
		log_line(LOG_ERR, "unknown command '%s'", cmd);
		usage(stderr);
		return 2;
	}
	if (!strcmp(cmd, "libvirt-hook"))
		return cmd_libvirt_hook(argc - 2, argv + 2);
	optind = 2;
	/* our messages, with a priority, instead of getopt's */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longopts, &opt)) != -1) {
		if (c != 'h' && c != 'V' && c != '?' && c != ':' && !strchr(command->needs, c) &&
		    !strchr(command->takes, c)) {
			log_line(LOG_ERR, "%s does not take --%s", cmd, longopts[opt].name);
			return 2;
		}
		switch (c) {
		case 't':
			o.table = optarg;
			break;
		case 'r':
			o.ram = optarg;
			break;
		case 'q':
			o.qmp = optarg;
			break;
		case 'm':
			if (parse_number(optarg, "mem-mib", 1, MAX_MEM_MIB, &o.mem_mib))
				return 2;
			break;
		case 'p':
			policy_given = true;
			if (!strcmp(optarg, "immediate")) {
				o.policy = POLICY_IMMEDIATE;
			} else if (!strcmp(optarg, "periodic")) {
				o.policy = POLICY_PERIODIC;
			} else if (!strcmp(optarg, "aged")) {
				o.policy = POLICY_AGED;
			} else {
				log_line(LOG_ERR, "unknown policy '%s'", optarg);
				return 2;
			}
			break;
		case 'i':
			if (parse_number(optarg, "interval-ms", 1, MAX_MS, &o.interval_ms))
				return 2;
			break;
		case 'a':
			if (parse_number(optarg, "age-ms", 1, MAX_MS, &o.age_ms))
				return 2;
			break;
		case 'l':
			if (parse_number(optarg, "rate-mib-s", 1, MAX_MEM_MIB, &o.rate_mib_s))
				return 2;
			break;
		case 'P':
			if (parse_number(optarg, "max-punches-s", 1, MAX_PUNCHES_S, &o.max_punches_s))
				return 2;
			break;
		case 'R':
			if (parse_number(optarg, "max-reads-s", 1, MAX_PUNCHES_S, &o.max_reads_s))
				return 2;
			break;
		case 's':
			if (parse_number(optarg, "status-ms", 0, MAX_MS, &o.status_ms))
				return 2;
			break;
		case 'T':
			if (parse_number(optarg, "target-mib", 0, MAX_MEM_MIB, &target))
				return 2;
			o.target_mib = target;
			break;
		case 'F':
			o.target_file = optarg;
			break;
		case 'B':
			if (parse_number(optarg, "budget-mib", 1, MAX_MEM_MIB, &o.budget_mib))
				return 2;
			break;
		case 'c':
			o.connect = optarg;
			break;
		case 'D':
			o.memory_backing_dir = optarg;
			break;
		case 'L':
			o.libvirt_run_dir = optarg;
			break;
		case 'C':
			o.chaos = 1;
			break;
#ifdef PAGEHINTD_TEST_HOOKS
		case 'S':
			if (parse_number(optarg, "stop-after-claiming", 0, MAX_PFN, &target))
				return 2;
			stop_pfn = target;
			o.stop_after_claiming = 1;
			break;
#endif
		case 'f':
			o.force = 1;
			break;
		case 'j':
			o.json = 1;
			break;
		case 'n':
			o.name = optarg;
			break;
		case 'M':
			o.metrics_file = optarg;
			break;
		case 'k':
			if (parse_number(optarg, "metrics-ms", 100, MAX_MS, &o.metrics_ms))
				return 2;
			break;
		case 'h':
			help();
			return 0;
		case 'V':
			printf("pagehintd %s\n", PAGEHINTD_VERSION);
			return 0;
		case ':':
			log_line(LOG_ERR, "%s needs an argument", argv[optind - 1]);
			usage(stderr);
			return 2;
		default:
			log_line(LOG_ERR, "unknown option '%s'", argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		log_line(LOG_ERR, "unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (!strcmp(cmd, "table-size")) {
		if (!o.mem_mib || !table_size_for(o.mem_mib * MiB)) {
			log_line(LOG_ERR, "table-size needs --mem-mib N (N > 0)");
			return 2;
		}
		printf("%zu\n", table_size_for(o.mem_mib * MiB));
		return 0;
	}
	if (!strcmp(cmd, "host"))
		return cmd_host(&o);
	if (!o.table || !o.ram) {
		log_line(LOG_ERR, "%s needs --table and --ram", cmd);
		return 2;
	}
	if (!strcmp(cmd, "init")) {
		if (!o.mem_mib) {
			log_line(LOG_ERR, "init needs --mem-mib N (N > 0)");
			return 2;
		}
		return cmd_init(&o);
	}
	if (!!o.chaos + (o.target_mib >= 0) + !!o.target_file > 1) {
		log_line(LOG_ERR, "--target-mib, --target-file and --chaos exclude each other");
		return 2;
	}
	/* --chaos is immediate by nature: it is the default there */
	if (o.chaos && !policy_given)
		o.policy = POLICY_IMMEDIATE;
	if (o.chaos && (o.policy != POLICY_IMMEDIATE || o.rate_mib_s)) {
		log_line(LOG_ERR, "--chaos drops at once: no --policy periodic or aged, no --rate-mib-s");
		return 2;
	}
	return !strcmp(cmd, "run") ? cmd_run(&o) : cmd_status(&o);
}
