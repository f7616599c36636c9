/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a libvirt domain's XML says about pagehint, as pure functions of
 * the XML (virDomainGetXMLDesc) and of the qemu.conf settings the paths
 * depend on: whether the domain is wired for pagehint, where its RAM file
 * and its table are, whether it has anything the host cannot serve, and
 * the target and policy its metadata asks for.
 *
 * The wiring (README, "pagehint under libvirt"):
 *   <memoryBacking><source type='file'/><access mode='shared'/>
 *   <shmem name='pagehint...'><model type='ivshmem-plain'/><size .../>
 *   <metadata><pagehint xmlns='DOMXML_NS' target_mib='N' policy='P'
 *                       floor_mib='F' weight='W'/>
 * A <shmem> whose name starts with DOMXML_SHMEM_PREFIX is the table;
 * every other <shmem> is the operator's business.
 */
#ifndef PAGEHINT_DOMXML_H
#define PAGEHINT_DOMXML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DOMXML_NS		"urn:x-pagehint:libvirt:1"
#define DOMXML_SHMEM_PREFIX	"pagehint"
/* libvirt's memory_backing_dir when qemu.conf does not set it */
#define DOMXML_DEFAULT_RAM_DIR	"/var/lib/libvirt/qemu/ram"

/* The qemu.conf settings a domain's paths depend on. */
struct domxml_conf {
	const char *memory_backing_dir;	/* as qemu.conf sets it; NULL: not set */
};

enum domxml_verdict {
	DOMXML_SERVE,		/* wired, and nothing in it the host cannot serve */
	DOMXML_NOT_WIRED,	/* no pagehint <shmem>: not ours */
	DOMXML_REFUSE,		/* wired, but not to be served: why says why */
};

struct domxml_domain {
	char name[256], uuid[40];
	int id;				/* -1: not running */
	uint64_t ram_bytes;		/* <memory> */
	char shmem_name[256];
	uint64_t shmem_bytes;		/* the table file's size, as libvirt makes it */
	char ram_path[4096];		/* QEMU's pc.ram; empty while not running */
	char table_path[4096];		/* /dev/shm/<shmem name> */
	/* whom QEMU runs as: the DAC label "+UID:+GID" libvirt gives a running domain */
	bool has_owner;
	unsigned int owner_uid, owner_gid;
	char why[256];			/* DOMXML_REFUSE, DOMXML_NOT_WIRED: why */
};

/*
 * Read domain XML @xml (@len bytes) with the qemu.conf settings @conf.
 * Returns the verdict, with @d filled in as far as the XML allowed; XML
 * that does not parse is DOMXML_REFUSE.
 */
enum domxml_verdict domxml_read(const char *xml, size_t len, const struct domxml_conf *conf,
				struct domxml_domain *d);

/* What the metadata element asks for. */
enum domxml_policy { DOMXML_POLICY_DEFAULT, DOMXML_AGED, DOMXML_IMMEDIATE, DOMXML_PERIODIC };

struct domxml_metadata {
	long long target_mib;		/* -1: none, volatile frames are kept */
	enum domxml_policy policy;
	/* under a host budget (share.h): never asked below floor_mib; weight */
	long long floor_mib;		/* 0 by default */
	unsigned int weight;		/* 1 .. DOMXML_MAX_WEIGHT; 100 by default */
};

#define DOMXML_DEFAULT_WEIGHT	100
#define DOMXML_MAX_WEIGHT	10000

/* 16 TiB: what pagehintd takes as --target-mib at most */
#define DOMXML_MAX_TARGET_MIB	(16LL << 20)

/*
 * The pagehint metadata of domain XML @xml, or the element alone as
 * virDomainGetMetadata() returns it.  No element: no target, the default
 * policy, floor 0, weight 100.  Returns 0 and fills @m, or -1 with why in
 * @why (a value that is not a decimal number of MiB or "none", too large,
 * an unknown policy, a weight out of range, an unknown attribute or child
 * element), leaving @m as it was: the caller keeps what it had.
 */
int domxml_metadata(const char *xml, size_t len, struct domxml_metadata *m, char *why,
		    size_t whylen);

#endif
