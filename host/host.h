/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host mode: one pagehintd for every hinted libvirt domain of the host.
 *
 * Through libvirt's C API (a read-only connection, libvirt's default event
 * loop) it finds the running domains at start and follows their
 * lifecycle, reboot, device and metadata events; each domain whose XML is
 * wired for pagehint (domxml.h) and has nothing the host cannot serve is
 * served by a struct service of its own, within its own budget, from one
 * loop.  When libvirtd goes away the guests are served on and the daemon
 * reconnects; what it finds then is reconciled with what it serves.  It
 * has no QMP socket of its own: libvirt owns QEMU's monitor.
 *
 * Which files belong to a domain is established through libvirt and the
 * kernel, never through anything the guest can write: the paths come
 * from the domain's XML and qemu.conf, QEMU's pid from libvirt's pid file
 * (root's), and both files must be the very ones that QEMU process maps
 * (/proc/PID/maps: device and inode), so that a copy at the path, or a
 * file put there after QEMU started, is refused.
 */
#ifndef PAGEHINT_HOST_H
#define PAGEHINT_HOST_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "domxml.h"
#include "service.h"

#define HOST_DEFAULT_URI	"qemu:///system"
/* where the system libvirtd's QEMU driver keeps each domain's <name>.pid */
#define HOST_DEFAULT_RUN_DIR	"/run/libvirt/qemu"

struct host_options {
	const char *uri;
	const char *run_dir;		/* libvirt's QEMU state directory */
	struct domxml_conf conf;	/* qemu.conf's settings */
	/* the per-guest budget and pace, for each policy */
	struct service_limits aged, immediate, periodic;
	unsigned int age_passes;	/* aged: unused for this many passes first */
	long long default_target_mib;	/* without metadata; -1: none */
	uint64_t budget_bytes;		/* what all guests may hold together; 0: no budget */
	unsigned long status_ms;	/* 0: no status lines */
	unsigned long watchdog_ms;	/* systemd's WATCHDOG=1 this often; 0: none */
	const char *metrics_file;	/* every domain's metrics; NULL: none */
	unsigned long metrics_ms;	/* between two writes of metrics_file */
};

/*
 * Serve until *@stopping.  Returns 0, or 1 when it could not start (the
 * event loop), with a log line saying why.  A libvirtd that cannot be
 * reached at start is waited for, as one that goes away later.
 */
int host_run(const struct host_options *o, volatile sig_atomic_t *stopping);

/*
 * Whether process @pid maps the files open as @table_fd and @ram_fd (both
 * of them, by device and inode).  0: it does; -1 with why in @err.
 */
int host_qemu_maps(pid_t pid, int table_fd, int ram_fd, const char *table_path,
		   const char *ram_path, char *err, size_t errlen);

/* QEMU's pid from libvirt's pid file @run_dir/@name.pid; -1 with why in @err. */
pid_t host_qemu_pid(const char *run_dir, const char *name, char *err, size_t errlen);

#endif
