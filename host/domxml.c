// SPDX-License-Identifier: GPL-2.0
/*
 * A libvirt domain's XML, read with libxml2: is it wired for pagehint,
 * where are its files, what must the host refuse, what does its metadata
 * ask for.  Pure functions: what the daemon does with them is its own.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>

#include "domxml.h"
#include "table.h"

/*
 * libvirt names a running domain's private directories "<id>-<name>",
 * the name cut to its first 20 characters (virDomainDefGetShortName());
 * QEMU's RAM file is the memory backend "pc.ram" in the one under
 * memory_backing_dir (qemuGetMemoryBackingPath()).
 */
#define SHORT_NAME_CHARS	20
#define RAM_BACKEND		"pc.ram"

static void say(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static xmlDocPtr parse(const char *xml, size_t len)
{
	if (len > INT_MAX)
		return NULL;
	/* no network, no entities expanded, no messages on stderr: a verdict */
	return xmlReadMemory(xml, (int)len, "domain.xml", NULL,
			     XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
}

static double xpath_number(xmlXPathContextPtr ctx, const char *expr)
{
	xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST expr, ctx);
	double v = o ? xmlXPathCastToNumber(o) : 0;

	xmlXPathFreeObject(o);
	return v;
}

/* The string value of @expr into @buf; false when it does not fit. */
static bool xpath_string(xmlXPathContextPtr ctx, const char *expr, char *buf, size_t len)
{
	xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST expr, ctx);
	xmlChar *s = o ? xmlXPathCastToString(o) : NULL;
	bool fits = s && strlen((char *)s) < len;

	snprintf(buf, len, "%s", fits ? (char *)s : "");
	xmlFree(s);
	xmlXPathFreeObject(o);
	return fits;
}

static bool xpath_any(xmlXPathContextPtr ctx, const char *expr)
{
	char e[512];

	snprintf(e, sizeof(e), "count(%s)", expr);
	return xpath_number(ctx, e) > 0;
}

/*
 * A decimal number of digits only, in libvirt's @unit (virScaleInteger():
 * "b" or "bytes", one of k M G T P E alone or with "iB" for powers of
 * 1024, with "B" for powers of 1000, any case; no unit: @dflt), in bytes.
 * false on anything else, or an overflow.
 */
static bool scaled(const char *digits, const char *unit, uint64_t dflt, uint64_t *bytes)
{
	static const char prefixes[] = "kmgtpe";
	uint64_t v = 0, scale = dflt, base = 1024;
	const char *p;

	if (!strcasecmp(unit, "b") || !strcasecmp(unit, "bytes")) {
		scale = 1;
	} else if (*unit) {
		p = strchr(prefixes, tolower((unsigned char)unit[0]));
		if (!p || !*p)
			return false;
		if (!strcasecmp(unit + 1, "B"))
			base = 1000;
		else if (unit[1] && strcasecmp(unit + 1, "iB"))
			return false;
		for (scale = base; p > prefixes; p--)
			scale *= base;	/* at most 1024^6: no overflow */
	}
	if (!*digits)
		return false;
	for (p = digits; *p; p++) {
		if (*p < '0' || *p > '9' || v > (UINT64_MAX - (*p - '0')) / 10)
			return false;
		v = v * 10 + (*p - '0');
	}
	if (v > UINT64_MAX / scale)
		return false;
	*bytes = v * scale;
	return true;
}

/* @name cut to its first @n UTF-8 characters, as libvirt's short name does. */
static int utf8_prefix_len(const char *name, unsigned int n)
{
	const unsigned char *p = (const unsigned char *)name;

	while (*p && n) {
		p++;
		while ((*p & 0xc0) == 0x80)	/* continuation bytes */
			p++;
		n--;
	}
	return (const char *)p - name;
}

/* Only names that are one plain file name under /dev/shm. */
static bool safe_file_name(const char *s)
{
	if (!*s || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.'))
			return false;
	return true;
}

/*
 * What the host cannot serve, first the devices that write guest RAM
 * behind its back: a hole punched under a device's DMA mapping corrupts
 * the guest silently (QEMU itself disables RAM discard for them:
 * ram_block_discard_disable()).
 */
static const struct {
	const char *xpath, *why;
} refusals[] = {
	{ "/domain/devices/hostdev | /domain/devices/interface[@type='hostdev']",
	  "it has an assigned host device (<hostdev>, VFIO), which writes guest RAM behind the host's back" },
	{ "/domain/devices/interface[@type='vdpa'] | /domain/devices/disk[@type='vhostvdpa']",
	  "it has a vDPA device, which writes guest RAM behind the host's back" },
	{ "//iommufd | //@iommufd[. != 'no']",
	  "it uses iommufd, through which devices write guest RAM behind the host's back" },
	{ "/domain/launchSecurity",
	  "it is a confidential guest (<launchSecurity>): the host cannot give its memory back" },
	{ "/domain/memoryBacking/locked",
	  "its memory is locked (<memoryBacking><locked/>)" },
	{ "/domain/memoryBacking/hugepages",
	  "its memory is in huge pages (<memoryBacking><hugepages>), which cannot be given back 4 KiB at a time" },
	{ "/domain/maxMemory | /domain/devices/memory",
	  "it has memory devices or <maxMemory> (DIMMs, virtio-mem); pagehint serves one RAM backend" },
	{ "/domain/cpu/numa/cell",
	  "it has NUMA cells (<cpu><numa>), each with a RAM backend of its own; pagehint serves one" },
};

#define NR_REFUSALS	(sizeof(refusals) / sizeof(refusals[0]))

static enum domxml_verdict refuse(struct domxml_domain *d, const char *why)
{
	say(d->why, sizeof(d->why), "%s", why);
	return DOMXML_REFUSE;
}

/* The string value of the XPath expression @fmt... into @buf. */
static bool xpath_fmt(xmlXPathContextPtr ctx, char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static bool xpath_fmt(xmlXPathContextPtr ctx, char *buf, size_t len, const char *fmt, ...)
{
	char expr[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(expr, sizeof(expr), fmt, ap);
	va_end(ap);
	return xpath_string(ctx, expr, buf, len);
}

/* The pagehint <shmem>, the only one: name, model, size. */
static enum domxml_verdict read_shmem(xmlXPathContextPtr ctx, struct domxml_domain *d)
{
	static const char shmem[] = "/domain/devices/shmem[starts-with(@name, '"
				    DOMXML_SHMEM_PREFIX "')]";
	char value[64], unit[16];

	if (!xpath_fmt(ctx, d->shmem_name, sizeof(d->shmem_name), "string(%s/@name)", shmem) ||
	    !safe_file_name(d->shmem_name))
		return refuse(d, "its pagehint <shmem> name is not a plain file name (letters, digits, '-', '_', '.')");
	xpath_fmt(ctx, value, sizeof(value), "string(%s/model/@type)", shmem);
	if (strcmp(value, "ivshmem-plain"))
		return refuse(d, "its pagehint <shmem> is not <model type='ivshmem-plain'/>");
	xpath_fmt(ctx, value, sizeof(value), "string(count(%s/server))", shmem);
	if (strcmp(value, "0"))
		return refuse(d, "its pagehint <shmem> has a <server>: the table is a file, not a server's");
	xpath_fmt(ctx, value, sizeof(value), "string(%s/size)", shmem);
	xpath_fmt(ctx, unit, sizeof(unit), "string(%s/size/@unit)", shmem);
	/* libvirt's default for an ivshmem-plain without <size> */
	if (!value[0])
		d->shmem_bytes = 4ULL << 20;
	else if (!scaled(value, unit, 1, &d->shmem_bytes))
		return refuse(d, "its pagehint <shmem> has a <size> that is not a size");
	return DOMXML_SERVE;
}

static enum domxml_verdict read_domain(xmlXPathContextPtr ctx, const struct domxml_conf *conf,
				       struct domxml_domain *d)
{
	char value[64], unit[16], machine[64], expr[512];
	unsigned int i;
	int n;

	d->id = -1;
	if (!xpath_any(ctx, "/domain"))
		return refuse(d, "not a libvirt domain's XML");
	xpath_string(ctx, "/domain/name", d->name, sizeof(d->name));
	xpath_string(ctx, "/domain/uuid", d->uuid, sizeof(d->uuid));
	if (xpath_string(ctx, "/domain/@id", value, sizeof(value)) && value[0])
		d->id = (int)xpath_number(ctx, "number(/domain/@id)");

	snprintf(expr, sizeof(expr), "count(/domain/devices/shmem[starts-with(@name, '%s')])",
		 DOMXML_SHMEM_PREFIX);
	n = (int)xpath_number(ctx, expr);
	if (!n) {
		say(d->why, sizeof(d->why), "it has no <shmem> named %s...", DOMXML_SHMEM_PREFIX);
		return DOMXML_NOT_WIRED;
	}
	if (n > 1)
		return refuse(d, "it has more than one pagehint <shmem>; one table serves one guest");
	if (read_shmem(ctx, d) != DOMXML_SERVE)
		return DOMXML_REFUSE;
	snprintf(d->table_path, sizeof(d->table_path), "/dev/shm/%s", d->shmem_name);

	for (i = 0; i < NR_REFUSALS; i++)
		if (xpath_any(ctx, refusals[i].xpath))
			return refuse(d, refusals[i].why);

	xpath_string(ctx, "string(/domain/memoryBacking/source/@type)", value, sizeof(value));
	if (strcmp(value, "file"))
		return refuse(d, "its RAM is not in a file (<memoryBacking><source type='file'/>)");
	xpath_string(ctx, "string(/domain/memoryBacking/access/@mode)", value, sizeof(value));
	if (strcmp(value, "shared"))
		return refuse(d, "its RAM file is not shared (<memoryBacking><access mode='shared'/>)");
	xpath_string(ctx, "string(/domain/os/type/@arch)", value, sizeof(value));
	xpath_string(ctx, "string(/domain/os/type/@machine)", machine, sizeof(machine));
	if (strcmp(value, "x86_64") ||
	    (strcmp(machine, "q35") && strncmp(machine, "pc-q35-", strlen("pc-q35-"))))
		return refuse(d, "it is not an x86_64 q35 machine, whose RAM layout pagehint knows");

	xpath_string(ctx, "string(/domain/memory)", value, sizeof(value));
	xpath_string(ctx, "string(/domain/memory/@unit)", unit, sizeof(unit));
	if (!scaled(value, unit, 1024, &d->ram_bytes) || !table_size_for(d->ram_bytes))
		return refuse(d, "its <memory> is not a whole number of 4 KiB pages");
	if (table_size_for(d->ram_bytes) > d->shmem_bytes) {
		say(d->why, sizeof(d->why),
		    "its pagehint <shmem> has %llu bytes, and its table needs %zu (<size unit='M'>%llu</size> at least)",
		    (unsigned long long)d->shmem_bytes, table_size_for(d->ram_bytes),
		    (unsigned long long)((table_size_for(d->ram_bytes) + (1 << 20) - 1) >> 20));
		return DOMXML_REFUSE;
	}

	/* the DAC driver's label: QEMU's user and group, which must open the table */
	if (xpath_string(ctx, "string(/domain/seclabel[@model='dac']/label)", value,
			 sizeof(value)) &&
	    sscanf(value, "+%u:+%u%c", &d->owner_uid, &d->owner_gid, unit) == 2)
		d->has_owner = true;

	if (d->id >= 0) {
		const char *dir = conf->memory_backing_dir;

		/* qemu.conf's memory_backing_dir gets libvirt/qemu appended; the default not */
		n = snprintf(d->ram_path, sizeof(d->ram_path), "%s%s/%d-%.*s/%s",
			     dir ? dir : DOMXML_DEFAULT_RAM_DIR, dir ? "/libvirt/qemu" : "", d->id,
			     utf8_prefix_len(d->name, SHORT_NAME_CHARS), d->name, RAM_BACKEND);
		if (n < 0 || (size_t)n >= sizeof(d->ram_path))
			return refuse(d, "its RAM file's path is too long");
	}
	return DOMXML_SERVE;
}

enum domxml_verdict domxml_read(const char *xml, size_t len, const struct domxml_conf *conf,
				struct domxml_domain *d)
{
	enum domxml_verdict v;
	xmlXPathContextPtr ctx;
	xmlDocPtr doc;

	memset(d, 0, sizeof(*d));
	d->id = -1;
	doc = parse(xml, len);
	if (!doc)
		return refuse(d, "its XML does not parse");
	ctx = xmlXPathNewContext(doc);
	if (!ctx) {
		xmlFreeDoc(doc);
		return refuse(d, "no memory to read its XML");
	}
	v = read_domain(ctx, conf, d);
	xmlXPathFreeContext(ctx);
	xmlFreeDoc(doc);
	return v;
}

static const char *const policy_names[] = {
	[DOMXML_AGED] = "aged", [DOMXML_IMMEDIATE] = "immediate", [DOMXML_PERIODIC] = "periodic",
};

/* The element's attributes and children, all checked before any is taken. */
static int read_element(xmlNodePtr e, struct domxml_metadata *m, char *why, size_t whylen)
{
	struct domxml_metadata new = { .target_mib = -1, .policy = DOMXML_POLICY_DEFAULT,
				       .weight = DOMXML_DEFAULT_WEIGHT };
	xmlAttrPtr a;
	xmlNodePtr c;
	unsigned int i;

	for (c = e->children; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE) {
			say(why, whylen, "unknown element <%s> in the pagehint metadata",
			    (const char *)c->name);
			return -1;
		}
	for (a = e->properties; a; a = a->next) {
		xmlChar *v = xmlNodeListGetString(e->doc, a->children, 1);
		const char *s = v ? (const char *)v : "";
		uint64_t bytes;
		int ok = 0;

		if (!strcmp((const char *)a->name, "target_mib")) {
			if (!strcmp(s, "none")) {
				new.target_mib = -1;
			} else if (!scaled(s, "", 1, &bytes)) {
				say(why, whylen, "target_mib='%.40s' is not a decimal number of MiB or \"none\"",
				    s);
				ok = -1;
			} else if (bytes > DOMXML_MAX_TARGET_MIB) {
				say(why, whylen, "target_mib='%.40s' is over %lld MiB", s,
				    DOMXML_MAX_TARGET_MIB);
				ok = -1;
			} else {
				new.target_mib = bytes;
			}
		} else if (!strcmp((const char *)a->name, "floor_mib")) {
			if (!scaled(s, "", 1, &bytes)) {
				say(why, whylen, "floor_mib='%.40s' is not a decimal number of MiB", s);
				ok = -1;
			} else if (bytes > DOMXML_MAX_TARGET_MIB) {
				say(why, whylen, "floor_mib='%.40s' is over %lld MiB", s,
				    DOMXML_MAX_TARGET_MIB);
				ok = -1;
			} else {
				new.floor_mib = bytes;
			}
		} else if (!strcmp((const char *)a->name, "weight")) {
			if (!scaled(s, "", 1, &bytes) || !bytes || bytes > DOMXML_MAX_WEIGHT) {
				say(why, whylen, "weight='%.40s' is not a whole number from 1 to %d", s,
				    DOMXML_MAX_WEIGHT);
				ok = -1;
			} else {
				new.weight = bytes;
			}
		} else if (!strcmp((const char *)a->name, "policy")) {
			ok = -1;
			for (i = 1; i < sizeof(policy_names) / sizeof(policy_names[0]); i++)
				if (!strcmp(s, policy_names[i])) {
					new.policy = i;
					ok = 0;
				}
			if (ok)
				say(why, whylen, "policy='%.40s' is none of aged, immediate, periodic", s);
		} else {
			say(why, whylen, "unknown attribute %.40s in the pagehint metadata",
			    (const char *)a->name);
			ok = -1;
		}
		xmlFree(v);
		if (ok)
			return -1;
	}
	*m = new;
	return 0;
}

int domxml_metadata(const char *xml, size_t len, struct domxml_metadata *m, char *why,
		    size_t whylen)
{
	xmlDocPtr doc = parse(xml, len);
	xmlNodePtr root, e = NULL, c;
	int ret;

	if (!doc) {
		say(why, whylen, "the metadata does not parse as XML");
		return -1;
	}
	root = xmlDocGetRootElement(doc);
	if (root && !strcmp((const char *)root->name, "domain")) {
		/* the whole domain: our element in our namespace under <metadata> */
		for (c = root->children; c; c = c->next)
			if (c->type == XML_ELEMENT_NODE &&
			    !strcmp((const char *)c->name, "metadata"))
				break;
		for (c = c ? c->children : NULL; c; c = c->next)
			if (c->type == XML_ELEMENT_NODE && c->ns &&
			    !strcmp((const char *)c->ns->href, DOMXML_NS))
				e = c;
		if (!e) {
			xmlFreeDoc(doc);
			*m = (struct domxml_metadata){ .target_mib = -1,
						       .policy = DOMXML_POLICY_DEFAULT,
						       .weight = DOMXML_DEFAULT_WEIGHT };
			return 0;
		}
	} else {
		/* virDomainGetMetadata()'s answer: the element alone, without its namespace */
		e = root;
	}
	if (!e || strcmp((const char *)e->name, "pagehint")) {
		say(why, whylen, "the pagehint metadata is not a <pagehint> element");
		ret = -1;
	} else {
		ret = read_element(e, m, why, whylen);
	}
	xmlFreeDoc(doc);
	return ret;
}
