// SPDX-License-Identifier: GPL-2.0
/*
 * Host mode: every hinted libvirt domain, one loop.  See host.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <systemd/sd-daemon.h>

#include "host.h"
#include "log.h"
#include "metrics.h"
#include "share.h"

#define RECONNECT_MS	1000
/* how often the host budget is looked at: a crossing is acted on within 1 s */
#define BUDGET_TICK_MS	500
/* a budget state that changes is logged at most this often */
#define BUDGET_SAY_NS	(10 * NSEC_PER_SEC)
/* a guest's pages in host swap are counted at most this often: 4 ms a GiB */
#define BUDGET_SWAP_LOOK_NS	(2 * NSEC_PER_SEC)
#define MiB		(1ULL << 20)

/* One domain the daemon serves. */
struct guest {
	struct domxml_domain d;		/* what its XML said at attach */
	struct domxml_metadata md;	/* what its metadata asks for */
	struct service svc;
	bool epoch_used;		/* a boot attached to the table's epoch */
	int attached;			/* as last logged; -1: not yet */
	bool seen;			/* in the last listing of running domains */
	/* what the host budget asks of it (share.h) */
	long long budget_target;	/* GIVEBACK_NO_TARGET: nothing */
	uint64_t asked, shortfall;	/* frames */
	uint64_t swapped;		/* bytes of the RAM file in host swap, */
	uint64_t swapped_seen_ns;	/* as of then (0: never looked), */
	uint64_t blocks_seen;		/* when its blocks were these */
	uint64_t volatile_by_age[SHARE_AGES], age_ns[SHARE_AGES];
};

struct host {
	const struct host_options *o;
	volatile sig_atomic_t *stopping;
	virConnectPtr conn;
	bool lost;			/* the connection closed: reconnect */
	bool said_unreachable;
	int events[5];			/* callback ids, -1: none */
	int pass_timer, reconnect_timer, status_timer, watchdog_timer, metrics_timer;
	int budget_timer;
	/* the budget: over it or not, as last worked out and as last logged */
	bool over_budget, said_over_budget;
	bool swap_unknown;		/* no cachestat(): swapped pages count as held */
	uint64_t budget_said_ns;
	uint64_t budget_held, budget_unmet;	/* bytes, frames: as last worked out */
	bool metrics_failing;		/* the last write of the metrics failed */
	struct guest **guests;
	size_t nr_guests;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* libvirt's errors go into our log lines, not onto stderr by themselves. */
static void quiet(void *opaque, virErrorPtr err)
{
	(void)opaque;
	(void)err;
}

static const char *why_libvirt(void)
{
	const char *m = virGetLastErrorMessage();

	return m ? m : "unknown error";
}

pid_t host_qemu_pid(const char *run_dir, const char *name, char *err, size_t errlen)
{
	char path[4096], buf[32], *end;
	long pid;
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s.pid", run_dir, name) >= (int)sizeof(path)) {
		snprintf(err, errlen, "the path of its pid file is too long");
		return -1;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "cannot read libvirt's pid file %s: %s", path,
			 strerror(errno));
		return -1;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	errno = 0;
	pid = strtol(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || pid <= 1 || pid > INT32_MAX) {
		snprintf(err, errlen, "libvirt's pid file %s holds no pid", path);
		return -1;
	}
	return pid;
}

int host_qemu_maps(pid_t pid, int table_fd, int ram_fd, const char *table_path,
		   const char *ram_path, char *err, size_t errlen)
{
	struct file_identity table_id, ram_id;
	bool table_mapped = false, ram_mapped = false;
	char path[64], *line = NULL;
	size_t len = 0;
	FILE *maps;

	if (file_identity(table_fd, &table_id) || file_identity(ram_fd, &ram_id)) {
		snprintf(err, errlen, "cannot stat the table or the RAM file: %s", strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	if (!maps) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	/* "start-end perms offset major:minor inode path", proc(5) */
	while (getline(&line, &len, maps) > 0) {
		unsigned int major, minor;
		unsigned long long ino;
		uint64_t dev;

		if (sscanf(line, "%*s %*s %*s %x:%x %llu", &major, &minor, &ino) != 3 || !ino)
			continue;
		dev = makedev(major, minor);
		table_mapped |= dev == table_id.dev && ino == table_id.ino;
		ram_mapped |= dev == ram_id.dev && ino == ram_id.ino;
	}
	free(line);
	fclose(maps);
	if (!table_mapped || !ram_mapped) {
		snprintf(err, errlen,
			 "%s is not the file the domain's QEMU (pid %d) maps: a copy, or put there after QEMU started; refusing it (restart the domain, so that QEMU makes its own)",
			 !table_mapped ? table_path : ram_path, (int)pid);
		return -1;
	}
	return 0;
}

static const struct service_limits *limits_for(const struct host *h, enum domxml_policy p)
{
	if (p == DOMXML_IMMEDIATE)
		return &h->o->immediate;
	if (p == DOMXML_PERIODIC)
		return &h->o->periodic;
	return &h->o->aged;
}

/*
 * The guest's target: the lower of its own (its metadata's) and what the
 * host budget asks of it.  A target that changed makes its pass due as
 * soon as its pace allows (service_hurry()), not after an idle backoff:
 * the pass gives back, or tells the guest's scanner to rest.  Returns
 * whether it did.
 */
static bool apply_target(struct guest *g)
{
	long long own = g->md.target_mib < 0 ? GIVEBACK_NO_TARGET : g->md.target_mib * (long long)MiB;
	long long target = own;

	if (g->budget_target != GIVEBACK_NO_TARGET &&
	    (target == GIVEBACK_NO_TARGET || g->budget_target < target))
		target = g->budget_target;
	if (target == g->svc.target_bytes)
		return false;
	g->svc.target_bytes = target;
	service_hurry(&g->svc, now_ns());
	return true;
}

static const char *policy_name(enum domxml_policy p)
{
	return p == DOMXML_IMMEDIATE ? "immediate" : p == DOMXML_PERIODIC ? "periodic" : "aged";
}

static struct guest *find_guest(struct host *h, const char *uuid)
{
	size_t i;

	for (i = 0; i < h->nr_guests; i++)
		if (!strcmp(h->guests[i]->d.uuid, uuid))
			return h->guests[i];
	return NULL;
}

static void detach(struct host *h, struct guest *g, const char *why)
{
	size_t i;

	log_line(LOG_NOTICE, "domain %s: no longer served: %s", g->d.name, why);
	service_free(&g->svc);
	for (i = 0; i < h->nr_guests; i++)
		if (h->guests[i] == g)
			h->guests[i] = h->guests[--h->nr_guests];
	free(g);
}

/*
 * The domain's metadata: at attach (@live false) its target and policy;
 * later (@live) its target, and a new policy only when the domain starts
 * again (what the aged policy keeps is made for it).  A value that is not
 * one is logged and ignored, and the guest keeps what it had.
 */
static void read_metadata(struct host *h, struct guest *g, virDomainPtr dom, bool live)
{
	struct domxml_metadata md = g->md;
	char why[256], *xml;
	virErrorPtr e;

	xml = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, DOMXML_NS,
				   VIR_DOMAIN_AFFECT_LIVE);
	if (!xml) {
		e = virGetLastError();
		if (!e || e->code != VIR_ERR_NO_DOMAIN_METADATA) {
			log_line(LOG_WARNING, "domain %s: cannot read its metadata (%s); target unchanged",
				 g->d.name, why_libvirt());
			return;
		}
		md = (struct domxml_metadata){ .target_mib = h->o->default_target_mib,
					       .policy = DOMXML_POLICY_DEFAULT,
					       .weight = DOMXML_DEFAULT_WEIGHT };
	} else if (domxml_metadata(xml, strlen(xml), &md, why, sizeof(why))) {
		log_line(LOG_WARNING, "domain %s: pagehint metadata ignored: %s; target stays %lld MiB",
			 g->d.name, why, g->md.target_mib);
		free(xml);
		return;
	}
	free(xml);
	if (live && md.policy != g->md.policy)
		log_line(LOG_NOTICE, "domain %s: policy %s takes effect when the domain starts again",
			 g->d.name, policy_name(md.policy));
	if (!live)
		g->md.policy = md.policy;
	if (h->o->budget_bytes && (!live || md.floor_mib != g->md.floor_mib ||
				   md.weight != g->md.weight))
		log_line(LOG_INFO, "domain %s: under the budget, floor %lld MiB, weight %u",
			 g->d.name, md.floor_mib, md.weight);
	g->md.floor_mib = md.floor_mib;
	g->md.weight = md.weight;
	if (live && md.target_mib == g->md.target_mib)
		return;
	g->md.target_mib = md.target_mib;
	if (md.target_mib < 0)
		log_line(LOG_INFO, "domain %s: no target: volatile frames are kept", g->d.name);
	else
		log_line(LOG_INFO, "domain %s: target %lld MiB", g->d.name, md.target_mib);
}

/* Open the domain's table and RAM file, and make sure they are its QEMU's. */
static int open_files(struct host *h, struct guest *g, struct table *t, char *err, size_t errlen)
{
	pid_t pid = host_qemu_pid(h->o->run_dir, g->d.name, err, errlen);

	if (pid < 0)
		return -1;
	if (table_open_for_qemu(t, g->d.table_path, g->d.ram_path, err, errlen))
		return -1;
	if (host_qemu_maps(pid, t->table_fd, t->ram_fd, g->d.table_path, g->d.ram_path, err,
			   errlen)) {
		table_close(t);
		return -1;
	}
	return 0;
}

/* The served guest whose table is the file at @path, NULL if none. */
static struct guest *served_on(struct host *h, const char *path)
{
	struct file_identity theirs;
	struct stat st;
	size_t i;

	if (stat(path, &st))
		return NULL;
	for (i = 0; i < h->nr_guests; i++)
		if (!file_identity(h->guests[i]->svc.t.table_fd, &theirs) &&
		    theirs.dev == st.st_dev && theirs.ino == st.st_ino)
			return h->guests[i];
	return NULL;
}

/* A running domain: serve it if it is wired and nothing in it says no. */
static void attach(struct host *h, virDomainPtr dom)
{
	struct guest *g = calloc(1, sizeof(*g));
	struct guest **more, *other;
	char err[512];
	struct table t;
	char *xml;
	enum domxml_verdict v;

	if (!g)
		return;
	xml = virDomainGetXMLDesc(dom, 0);
	if (!xml) {
		log_line(LOG_WARNING, "domain %s: cannot read its XML: %s", virDomainGetName(dom),
			 why_libvirt());
		free(g);
		return;
	}
	v = domxml_read(xml, strlen(xml), &h->o->conf, &g->d);
	free(xml);
	if (v == DOMXML_NOT_WIRED) {
		log_line(LOG_INFO, "domain %s: not hinted: %s", g->d.name, g->d.why);
		free(g);
		return;
	}
	if (v == DOMXML_REFUSE) {
		log_line(LOG_WARNING, "domain %s: not served: %s", g->d.name, g->d.why);
		free(g);
		return;
	}
	g->md = (struct domxml_metadata){ .target_mib = h->o->default_target_mib,
					  .policy = DOMXML_POLICY_DEFAULT,
					  .weight = DOMXML_DEFAULT_WEIGHT };
	g->budget_target = GIVEBACK_NO_TARGET;
	/*
	 * Another served domain's table (a <shmem> attached live, which no
	 * hook prepared, naming it): two guests would write states into one
	 * table, and one guest's memory go on the other's word.  Neither is
	 * served.
	 */
	other = served_on(h, g->d.table_path);
	if (other) {
		log_line(LOG_ERR, "domain %s: not served: its table %s is domain %s's too; neither is served (give each domain a <shmem> name of its own)",
			 g->d.name, g->d.table_path, other->d.name);
		detach(h, other, "another domain has its table");
		free(g);
		return;
	}
	if (open_files(h, g, &t, err, sizeof(err))) {
		log_line(LOG_WARNING, "domain %s: not served: %s", g->d.name, err);
		free(g);
		return;
	}
	/* a predecessor that died holding claims left them busy */
	table_recover_busy(&t);
	read_metadata(h, g, dom, false);
	more = realloc(h->guests, (h->nr_guests + 1) * sizeof(*more));
	if (!more || service_init(&g->svc, &t, g->md.policy != DOMXML_IMMEDIATE &&
				  g->md.policy != DOMXML_PERIODIC, h->o->age_passes,
				  limits_for(h, g->md.policy), now_ns())) {
		log_line(LOG_ERR, "domain %s: no memory to serve it", g->d.name);
		if (more)
			h->guests = more;
		table_close(&t);
		free(g);
		return;
	}
	h->guests = more;
	h->guests[h->nr_guests++] = g;
	apply_target(g);
	g->attached = -1;
	g->seen = true;
	log_line(LOG_NOTICE, "domain %s (%s, id %d): serving, table %s, RAM %s, policy %s",
		 g->d.name, g->d.uuid, g->d.id, g->d.table_path, g->d.ram_path,
		 policy_name(g->md.policy));
}

/* A domain that runs: served already (same id: nothing to do), or new. */
static void domain_runs(struct host *h, virDomainPtr dom)
{
	char uuid[VIR_UUID_STRING_BUFLEN];
	struct guest *g;

	if (virDomainGetUUIDString(dom, uuid))
		return;
	g = find_guest(h, uuid);
	if (g) {
		g->seen = true;
		if (g->d.id == (int)virDomainGetID(dom))
			return;
		/* stopped and started while libvirtd was out of reach */
		detach(h, g, "it was started again meanwhile");
	}
	attach(h, dom);
}

static void domain_stopped(struct host *h, virDomainPtr dom, const char *why)
{
	char uuid[VIR_UUID_STRING_BUFLEN];
	struct guest *g;

	if (virDomainGetUUIDString(dom, uuid))
		return;
	g = find_guest(h, uuid);
	if (g)
		detach(h, g, why);
}

static int on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail,
			void *opaque)
{
	struct host *h = opaque;

	(void)conn;
	(void)detail;
	switch (event) {
	case VIR_DOMAIN_EVENT_STARTED:
		domain_runs(h, dom);
		break;
	case VIR_DOMAIN_EVENT_STOPPED:
		domain_stopped(h, dom, "it stopped");
		break;
	case VIR_DOMAIN_EVENT_CRASHED:
		/* a crash may leave QEMU, stopped; it stops the domain either way */
		log_line(LOG_NOTICE, "domain %s crashed", virDomainGetName(dom));
		break;
	case VIR_DOMAIN_EVENT_SUSPENDED:
	case VIR_DOMAIN_EVENT_RESUMED:
		/* a paused guest changes nothing: its passes back off by themselves */
		log_line(LOG_INFO, "domain %s %s", virDomainGetName(dom),
			 event == VIR_DOMAIN_EVENT_SUSPENDED ? "paused" : "runs again");
		break;
	default:
		break;
	}
	return 0;
}

/*
 * libvirt reports a reboot once QEMU has reset the guest (three times per
 * reboot, as it happens), so the new boot may already run: start a new
 * epoch at once, as run does for a reset that nobody paused for.  A
 * guest's own reboot detaches first, so nothing was dropped meanwhile;
 * only a hard reset (virsh reset) can race with a pass.  Only the first
 * of the three voids the table: the others come before the new boot could
 * have attached.
 */
static void on_reboot(virConnectPtr conn, virDomainPtr dom, void *opaque)
{
	char uuid[VIR_UUID_STRING_BUFLEN];
	struct host *h = opaque;
	struct guest *g;

	(void)conn;
	if (virDomainGetUUIDString(dom, uuid))
		return;
	g = find_guest(h, uuid);
	if (!g)
		return;
	if (!g->epoch_used && !table_attached(&g->svc.t))
		return;
	table_reset(&g->svc.t);
	g->epoch_used = false;
	log_line(LOG_NOTICE, "domain %s reboots: new table epoch", g->d.name);
}

/* A device came or went: the domain's XML says whether it is still wired. */
static void on_device(virConnectPtr conn, virDomainPtr dom, const char *alias, void *opaque)
{
	char uuid[VIR_UUID_STRING_BUFLEN], *xml;
	struct host *h = opaque;
	struct domxml_domain d;
	struct guest *g;

	(void)conn;
	(void)alias;
	if (virDomainGetUUIDString(dom, uuid))
		return;
	g = find_guest(h, uuid);
	xml = virDomainGetXMLDesc(dom, 0);
	if (!xml)
		return;
	if (g && domxml_read(xml, strlen(xml), &h->o->conf, &d) != DOMXML_SERVE)
		detach(h, g, d.why);
	else if (!g)
		attach(h, dom);
	free(xml);
}

static void on_metadata(virConnectPtr conn, virDomainPtr dom, int type, const char *nsuri,
			void *opaque)
{
	char uuid[VIR_UUID_STRING_BUFLEN];
	struct host *h = opaque;
	struct guest *g;

	(void)conn;
	if (type != VIR_DOMAIN_METADATA_ELEMENT || !nsuri || strcmp(nsuri, DOMXML_NS) ||
	    virDomainGetUUIDString(dom, uuid))
		return;
	g = find_guest(h, uuid);
	if (!g)
		return;
	read_metadata(h, g, dom, true);
	if (apply_target(g))
		virEventUpdateTimeout(h->pass_timer, 0);
}

static void on_close(virConnectPtr conn, int reason, void *opaque)
{
	struct host *h = opaque;

	(void)conn;
	h->lost = true;
	log_line(LOG_WARNING, "lost libvirtd (%s); serving %zu domains on, reconnecting",
		 reason == VIR_CONNECT_CLOSE_REASON_EOF ? "it closed the connection" :
		 reason == VIR_CONNECT_CLOSE_REASON_KEEPALIVE ? "no keepalive answer" :
		 "connection error", h->nr_guests);
	virEventUpdateTimeout(h->reconnect_timer, RECONNECT_MS);
}

static void disconnect(struct host *h)
{
	unsigned int i;

	if (!h->conn)
		return;
	for (i = 0; i < sizeof(h->events) / sizeof(h->events[0]); i++)
		if (h->events[i] >= 0)
			virConnectDomainEventDeregisterAny(h->conn, h->events[i]);
	virConnectUnregisterCloseCallback(h->conn, on_close);
	virConnectClose(h->conn);
	h->conn = NULL;
}

/* Follow the domains' events @id with @cb, as callback @i; 0 or -1. */
static int follow(struct host *h, unsigned int i, int id,
		  virConnectDomainEventGenericCallback cb)
{
	h->events[i] = virConnectDomainEventRegisterAny(h->conn, NULL, id, cb, h, NULL);
	return h->events[i] < 0 ? -1 : 0;
}

/*
 * Connect, follow events, and reconcile what runs with what is served:
 * domains served that no longer run are let go, running ones not served
 * are attached.  Returns 0 once connected.
 */
static int connect_libvirt(struct host *h)
{
	virDomainPtr *doms = NULL;
	size_t i;
	int n;

	for (i = 0; i < sizeof(h->events) / sizeof(h->events[0]); i++)
		h->events[i] = -1;
	h->conn = virConnectOpenReadOnly(h->o->uri);
	if (!h->conn) {
		if (!h->said_unreachable)
			log_line(LOG_WARNING, "cannot reach libvirt at %s (%s); trying again every %d ms",
				 h->o->uri, why_libvirt(), RECONNECT_MS);
		h->said_unreachable = true;
		return -1;
	}
	h->said_unreachable = false;
	h->lost = false;
	/* a libvirtd that hangs is found too, not only one that exits */
	virConnectSetKeepAlive(h->conn, 5, 3);
	if (virConnectRegisterCloseCallback(h->conn, on_close, h, NULL)) {
		log_line(LOG_ERR, "cannot follow libvirt's connection: %s", why_libvirt());
		disconnect(h);
		return -1;
	}
	if (follow(h, 0, VIR_DOMAIN_EVENT_ID_LIFECYCLE, VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle)) ||
	    follow(h, 1, VIR_DOMAIN_EVENT_ID_REBOOT, VIR_DOMAIN_EVENT_CALLBACK(on_reboot)) ||
	    follow(h, 2, VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED, VIR_DOMAIN_EVENT_CALLBACK(on_device)) ||
	    follow(h, 3, VIR_DOMAIN_EVENT_ID_DEVICE_ADDED, VIR_DOMAIN_EVENT_CALLBACK(on_device)) ||
	    follow(h, 4, VIR_DOMAIN_EVENT_ID_METADATA_CHANGE,
		   VIR_DOMAIN_EVENT_CALLBACK(on_metadata))) {
		log_line(LOG_ERR, "cannot follow libvirt's domain events: %s", why_libvirt());
		disconnect(h);
		return -1;
	}
	n = virConnectListAllDomains(h->conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	if (n < 0) {
		log_line(LOG_ERR, "cannot list libvirt's domains: %s", why_libvirt());
		disconnect(h);
		return -1;
	}
	log_line(LOG_NOTICE, "connected to %s: %d running domains, %zu served already",
		 h->o->uri, n, h->nr_guests);
	for (i = 0; i < h->nr_guests; i++)
		h->guests[i]->seen = false;
	for (i = 0; i < (size_t)n; i++) {
		domain_runs(h, doms[i]);
		virDomainFree(doms[i]);
	}
	free(doms);
	for (i = h->nr_guests; i-- > 0;)
		if (!h->guests[i]->seen)
			detach(h, h->guests[i], "it stopped while libvirtd was out of reach");
	return 0;
}

static void on_reconnect(int timer, void *opaque)
{
	struct host *h = opaque;

	(void)timer;
	disconnect(h);
	if (!connect_libvirt(h))
		virEventUpdateTimeout(h->reconnect_timer, -1);
}

/* Say when a guest attaches and detaches, at most once a second each. */
static void report_attach(struct guest *g)
{
	int attached = table_attached(&g->svc.t);

	if (attached)
		g->epoch_used = true;
	if (attached == g->attached)
		return;
	if (attached)
		log_line(LOG_NOTICE, "domain %s attached", g->d.name);
	else if (g->attached >= 0)
		log_line(LOG_NOTICE, "domain %s detached: nothing is given back until it attaches again",
			 g->d.name);
	g->attached = attached;
}

/* Every guest whose pass is due, then sleep until the next is. */
static void on_pass(int timer, void *opaque)
{
	struct host *h = opaque;
	uint64_t now = now_ns(), next = now + NSEC_PER_SEC;
	struct giveback_pass done;
	size_t i;

	for (i = h->nr_guests; i-- > 0;) {
		struct guest *g = h->guests[i];

		report_attach(g);
		if (service_due(&g->svc, now) &&
		    service_pass(&g->svc, now, h->stopping, &done)) {
			/* its RAM file went away under it, or worse: that guest only */
			char why[128];

			snprintf(why, sizeof(why), "fallocate(PUNCH_HOLE) failed: %s",
				 strerror(errno));
			detach(h, g, why);
			continue;
		}
		if (g->svc.next_pass_ns < next)
			next = g->svc.next_pass_ns;
	}
	virEventUpdateTimeout(timer, next > now ? (int)((next - now + NSEC_PER_MSEC - 1) /
							  NSEC_PER_MSEC) : 0);
}

/* Say whether the guests are over the budget: each change, at most every 10 s. */
static void say_budget(struct host *h, const struct share_total *total, uint64_t now)
{
	if (h->over_budget == h->said_over_budget ||
	    (h->budget_said_ns && now - h->budget_said_ns < BUDGET_SAY_NS))
		return;
	if (h->over_budget)
		log_line(LOG_NOTICE, "over budget: the domains hold %.1f MiB, the budget is %.1f MiB",
			 total->held / (double)MiB, h->o->budget_bytes / (double)MiB);
	else
		log_line(LOG_NOTICE, "within budget: the domains hold %.1f MiB, the budget is %.1f MiB",
			 total->held / (double)MiB, h->o->budget_bytes / (double)MiB);
	h->said_over_budget = h->over_budget;
	h->budget_said_ns = now;
}

/*
 * What @g holds of the host's RAM for the budget: its RAM file's @blocks
 * less those in host swap (a budget is RAM; tmpfs counts a swapped page in
 * st_blocks).  Finding the swapped ones walks the file's pages, so it is
 * done only over the budget, at most every BUDGET_SWAP_LOOK_NS per guest
 * while its blocks do not fall, and each tick while they do (its passes
 * give back, and the frames they punch may have been in swap or in RAM).
 * Where the kernel cannot tell, every block counts as held, which is said
 * once.
 */
static uint64_t held_in_ram(struct host *h, struct guest *g, uint64_t blocks, uint64_t now)
{
	uint64_t in_ram;
	int err;

	if (h->swap_unknown)
		return blocks;
	if (!g->swapped_seen_ns || now - g->swapped_seen_ns >= BUDGET_SWAP_LOOK_NS ||
	    blocks < g->blocks_seen) {
		err = ram_in_memory(&g->svc.t, blocks, &in_ram);
		if (err) {
			log_line(LOG_WARNING, "the kernel cannot tell what of a RAM file is in swap (cachestat: %s): the budget counts swapped pages as held",
				 strerror(-err));
			h->swap_unknown = true;
			return blocks;
		}
		g->swapped = blocks - in_ram;
		g->swapped_seen_ns = now;
		g->blocks_seen = blocks;
	}
	return blocks > g->swapped ? blocks - g->swapped : 0;
}

/*
 * The host budget, every BUDGET_TICK_MS: what each guest may hold
 * (share_budget()).  While the guests' RAM files hold less than it, blocks
 * and swap together, a look at each file's blocks is all it costs; only
 * over it are the pages in host swap left out (held_in_ram()) and the
 * guests' volatile frames counted (a look at each chunk's count, none at
 * the table).  The guests' passes do the giving back, each at its policy's
 * pace and within its own budget of reads and fallocate() calls: a guest
 * that cannot give what it is asked keeps a shortfall, and the daemon does
 * not spin on it.  A target is what the guest's passes compare with its
 * blocks (giveback_pass()), so the budget's target, worked out in RAM, is
 * moved up by what the guest has in swap.
 */
static void on_budget(int timer, void *opaque)
{
	struct host *h = opaque;
	uint64_t now = now_ns(), held = 0;
	struct share_total total;
	uint64_t *blocks;
	struct share_guest *sg;
	bool due = false;
	size_t i;

	(void)timer;
	sg = calloc(h->nr_guests ? h->nr_guests : 1, sizeof(*sg));
	blocks = calloc(h->nr_guests ? h->nr_guests : 1, sizeof(*blocks));
	if (!sg || !blocks)
		goto out;
	for (i = 0; i < h->nr_guests; i++) {
		blocks[i] = ram_resident(&h->guests[i]->svc.t);
		held += blocks[i];
	}
	for (i = 0; i < h->nr_guests; i++) {
		struct guest *g = h->guests[i];

		sg[i].held = held > h->o->budget_bytes ? held_in_ram(h, g, blocks[i], now) : blocks[i];
		/* a detached guest would give nothing back: it is not asked */
		sg[i].floor = table_attached(&g->svc.t) ? g->md.floor_mib * MiB : sg[i].held;
		sg[i].weight = g->md.weight;
	}
	for (i = 0; held > h->o->budget_bytes && i < h->nr_guests; i++) {
		struct guest *g = h->guests[i];

		if (service_volatile_ages(&g->svc, now, g->volatile_by_age, g->age_ns)) {
			sg[i].volatile_ = g->volatile_by_age;
			sg[i].age_ns = g->age_ns;
		}
	}
	if (share_budget(sg, h->nr_guests, h->o->budget_bytes, &total)) {
		log_line(LOG_ERR, "no memory to work out the budget: targets unchanged");
		goto out;
	}
	for (i = 0; i < h->nr_guests; i++) {
		struct guest *g = h->guests[i];

		/* the target in RAM, plus what is in swap: what its passes compare */
		g->budget_target = sg[i].target;
		if (sg[i].target != GIVEBACK_NO_TARGET)
			g->budget_target += blocks[i] - sg[i].held;
		g->asked = sg[i].asked;
		g->shortfall = sg[i].shortfall;
		due |= apply_target(g);
	}
	if (due)
		virEventUpdateTimeout(h->pass_timer, 0);
	h->over_budget = total.over;
	h->budget_held = total.held;
	h->budget_unmet = total.unmet;
	say_budget(h, &total, now);
out:
	free(blocks);
	free(sg);
}

static void on_status(int timer, void *opaque)
{
	struct host *h = opaque;
	size_t i;

	(void)timer;
	for (i = 0; i < h->nr_guests; i++) {
		struct guest *g = h->guests[i];

		printf("pagehintd: %s %s: %" PRIu64 " passes, %" PRIu64 " chunks read, dropped %"
		       PRIu64 " unused %" PRIu64 " volatile, host holds %.1f MiB", g->d.name,
		       table_attached(&g->svc.t) ? "attached" : "waiting", g->svc.passes,
		       g->svc.chunks_read, g->svc.t.host.dropped_unused,
		       g->svc.t.host.dropped_volatile, ram_resident(&g->svc.t) / (double)MiB);
		if (h->o->budget_bytes)
			printf(", budget asks %.1f MiB, short %.1f MiB",
			       g->asked * 4096 / (double)MiB, g->shortfall * 4096 / (double)MiB);
		putchar('\n');
	}
	if (h->o->budget_bytes)
		printf("pagehintd: budget %.1f MiB: the domains hold %.1f MiB, %.1f MiB of it nobody above a floor can be asked for\n",
		       h->o->budget_bytes / (double)MiB, h->budget_held / (double)MiB,
		       h->budget_unmet * 4096 / (double)MiB);
	fflush(stdout);
}

/*
 * Every served domain's metrics in one file, each labelled with the name
 * and UUID libvirt gives it (never what its guest says).  A failure is
 * said once, and so is the first success after it.
 */
static void on_metrics(int timer, void *opaque)
{
	struct host *h = opaque;
	struct guest_metrics *m;
	size_t i;

	(void)timer;
	m = calloc(h->nr_guests ? h->nr_guests : 1, sizeof(*m));
	if (!m)
		return;
	for (i = 0; i < h->nr_guests; i++) {
		struct guest *g = h->guests[i];

		metrics_snapshot(&m[i], &g->svc.t, g->d.name, g->svc.target_bytes);
		m[i].uuid = g->d.uuid;
		m[i].budgeted = h->o->budget_bytes;
		m[i].budget_asked_bytes = g->asked * 4096;
		m[i].budget_shortfall_bytes = g->shortfall * 4096;
	}
	if (metrics_write(h->o->metrics_file, m, h->nr_guests)) {
		if (!h->metrics_failing)
			log_line(LOG_WARNING, "cannot write metrics to %s: %s", h->o->metrics_file,
				 strerror(errno));
		h->metrics_failing = true;
	} else if (h->metrics_failing) {
		log_line(LOG_NOTICE, "metrics written to %s again", h->o->metrics_file);
		h->metrics_failing = false;
	}
	free(m);
}

/*
 * systemd's watchdog, from the loop that serves every domain: a loop that
 * wedges (a libvirt call that never returns) stops the pings, and systemd
 * restarts the daemon.
 */
static void on_watchdog(int timer, void *opaque)
{
	(void)timer;
	(void)opaque;
	sd_notify(0, "WATCHDOG=1");
}

static void on_signal(int watch, int fd, int events, void *opaque)
{
	struct host *h = opaque;
	struct signalfd_siginfo si;

	(void)watch;
	(void)events;
	while (read(fd, &si, sizeof(si)) == sizeof(si))
		if (si.ssi_signo != SIGHUP)
			*h->stopping = 1;
}

int host_run(const struct host_options *o, volatile sig_atomic_t *stopping)
{
	struct host h = { .o = o, .stopping = stopping, .pass_timer = -1,
			  .reconnect_timer = -1, .status_timer = -1, .watchdog_timer = -1,
			  .metrics_timer = -1, .budget_timer = -1,
			  .events = { -1, -1, -1, -1, -1 } };
	sigset_t signals;
	int sfd, watch;

	virSetErrorFunc(NULL, quiet);
	if (virEventRegisterDefaultImpl()) {
		log_line(LOG_ERR, "cannot start libvirt's event loop: %s", why_libvirt());
		return 1;
	}
	/* the signals come through the event loop, which a handler could not end */
	sigemptyset(&signals);
	sigaddset(&signals, SIGINT);
	sigaddset(&signals, SIGTERM);
	sigaddset(&signals, SIGHUP);
	sigprocmask(SIG_BLOCK, &signals, NULL);
	sfd = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
	watch = sfd < 0 ? -1 : virEventAddHandle(sfd, VIR_EVENT_HANDLE_READABLE, on_signal, &h,
						NULL);
	h.pass_timer = virEventAddTimeout(-1, on_pass, &h, NULL);
	h.reconnect_timer = virEventAddTimeout(-1, on_reconnect, &h, NULL);
	if (o->status_ms)
		h.status_timer = virEventAddTimeout(o->status_ms, on_status, &h, NULL);
	if (o->watchdog_ms)
		h.watchdog_timer = virEventAddTimeout(o->watchdog_ms, on_watchdog, &h, NULL);
	if (o->metrics_file)
		h.metrics_timer = virEventAddTimeout(o->metrics_ms, on_metrics, &h, NULL);
	if (o->budget_bytes)
		h.budget_timer = virEventAddTimeout(BUDGET_TICK_MS, on_budget, &h, NULL);
	if (watch < 0 || h.pass_timer < 0 || h.reconnect_timer < 0 ||
	    (o->watchdog_ms && h.watchdog_timer < 0) || (o->budget_bytes && h.budget_timer < 0) ||
	    (o->metrics_file && h.metrics_timer < 0)) {
		log_line(LOG_ERR, "cannot set up the event loop");
		return 1;
	}
	if (connect_libvirt(&h))
		virEventUpdateTimeout(h.reconnect_timer, RECONNECT_MS);
	virEventUpdateTimeout(h.pass_timer, 0);
	sd_notify(0, "READY=1");
	while (!*stopping)
		if (virEventRunDefaultImpl()) {
			log_line(LOG_ERR, "libvirt's event loop failed: %s", why_libvirt());
			break;
		}
	sd_notify(0, "STOPPING=1");
	while (h.nr_guests)
		detach(&h, h.guests[h.nr_guests - 1], "pagehintd stops");
	free(h.guests);
	disconnect(&h);
	virEventRemoveTimeout(h.pass_timer);
	virEventRemoveTimeout(h.reconnect_timer);
	if (h.status_timer >= 0)
		virEventRemoveTimeout(h.status_timer);
	if (h.watchdog_timer >= 0)
		virEventRemoveTimeout(h.watchdog_timer);
	if (h.metrics_timer >= 0)
		virEventRemoveTimeout(h.metrics_timer);
	if (h.budget_timer >= 0)
		virEventRemoveTimeout(h.budget_timer);
	/* domains nobody serves have no metrics: not the last ones, forever */
	if (o->metrics_file)
		unlink(o->metrics_file);
	virEventRemoveHandle(watch);
	close(sfd);
	return 0;
}
