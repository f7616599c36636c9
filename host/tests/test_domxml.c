// SPDX-License-Identifier: GPL-2.0
/*
 * What pagehintd reads from a libvirt domain's XML: the wiring, the paths
 * of the RAM file and the table, each refusal, and the metadata.  The
 * fixtures in tests/domxml are libvirt 9.0's own dumpxml (see its README).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../domxml.h"

#ifndef FIXTURES
#define FIXTURES "tests/domxml"
#endif

static const struct domxml_conf default_conf = { NULL };

/* Fixture @name, with id='@id' as a running domain's XML has (-1: none). */
static char *fixture(const char *name, int id)
{
	static const char root[] = "<domain type='qemu'>";
	char path[256], *xml = NULL, *live;
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.xml", FIXTURES, name);
	f = fopen(path, "r");
	if (!f)
		fail_msg("no fixture %s", path);
	assert_int_equal(getdelim(&xml, &n, 0, f) > 0, 1);
	fclose(f);
	if (id < 0)
		return xml;
	assert_non_null(strstr(xml, root));
	assert_true(asprintf(&live, "<domain type='qemu' id='%d'>%s", id,
			     strstr(xml, root) + strlen(root)) > 0);
	free(xml);
	return live;
}

static enum domxml_verdict read_fixture(const char *name, int id, const struct domxml_conf *c,
					struct domxml_domain *d)
{
	char *xml = fixture(name, id);
	enum domxml_verdict v = domxml_read(xml, strlen(xml), c, d);

	free(xml);
	return v;
}

static void test_wired(void **state)
{
	struct domxml_domain d;

	(void)state;
	if (read_fixture("wired", -1, &default_conf, &d) != DOMXML_SERVE)
		fail_msg("wired.xml not served: %s", d.why);
	assert_string_equal(d.name, "ph-wired");
	assert_string_equal(d.uuid, "5e2a1b3c-7d4f-4e6a-9b8c-0d1e2f3a4b5c");
	assert_int_equal(d.id, -1);
	assert_int_equal(d.ram_bytes, 256ULL << 20);
	assert_string_equal(d.shmem_name, "pagehint-ph-wired");
	assert_int_equal(d.shmem_bytes, 1 << 20);
	assert_string_equal(d.table_path, "/dev/shm/pagehint-ph-wired");
	/* not running: no RAM file */
	assert_string_equal(d.ram_path, "");
}

/*
 * The RAM file's path, as libvirt 9.0's "virsh domxml-to-native
 * qemu-argv" showed it: memory_backing_dir unset, and set in qemu.conf
 * (libvirt appends libvirt/qemu then); the name cut to 20 characters.
 */
static void test_ram_paths(void **state)
{
	struct domxml_conf set = { .memory_backing_dir = "/dev/shm/ph28" };
	struct domxml_domain d;
	char *xml, *renamed, *at;

	(void)state;
	assert_int_equal(read_fixture("wired", 7, &default_conf, &d), DOMXML_SERVE);
	assert_int_equal(d.id, 7);
	assert_string_equal(d.ram_path, "/var/lib/libvirt/qemu/ram/7-ph-wired/pc.ram");
	assert_int_equal(read_fixture("wired", 7, &set, &d), DOMXML_SERVE);
	assert_string_equal(d.ram_path, "/dev/shm/ph28/libvirt/qemu/7-ph-wired/pc.ram");

	xml = fixture("wired", 12);
	at = strstr(xml, "<name>ph-wired</name>");
	assert_non_null(at);
	assert_true(asprintf(&renamed, "%.*s<name>hinted-guest-with-a-long-name</name>%s",
			     (int)(at - xml), xml, at + strlen("<name>ph-wired</name>")) > 0);
	assert_int_equal(domxml_read(renamed, strlen(renamed), &set, &d), DOMXML_SERVE);
	assert_string_equal(d.ram_path,
			    "/dev/shm/ph28/libvirt/qemu/12-hinted-guest-with-a-/pc.ram");
	free(renamed);
	/*
	 * 20 characters, not bytes: libvirt (in a UTF-8 locale) cuts a UTF-8
	 * name between characters, as domxml-to-native showed
	 */
	assert_true(asprintf(&renamed, "%.*s<name>%s</name>%s", (int)(at - xml), xml,
			     "g\xc3\xa4st-\xc3\xbc\xc3\xbc\xc3\xbc-0123456789abcdef",
			     at + strlen("<name>ph-wired</name>")) > 0);
	assert_int_equal(domxml_read(renamed, strlen(renamed), &default_conf, &d), DOMXML_SERVE);
	assert_string_equal(d.ram_path,
			    "/var/lib/libvirt/qemu/ram/12-g\xc3\xa4st-\xc3\xbc\xc3\xbc\xc3\xbc-0123456789a/pc.ram");
	free(renamed);
	free(xml);
}

/* @xml with @add put before its </domain>; free() it */
static char *with(const char *xml, const char *add)
{
	const char *end = strstr(xml, "</domain>");
	char *out;

	assert_non_null(end);
	assert_true(asprintf(&out, "%.*s%s%s", (int)(end - xml), xml, add, end) > 0);
	return out;
}

/*
 * Whom QEMU runs as, for the hook to give the table to: the DAC label of
 * a running domain's XML (libvirt 9.0 writes "+UID:+GID"), nothing else.
 */
static void test_owner(void **state)
{
	static const struct {
		const char *seclabel;
		bool has_owner;
		unsigned int uid, gid;
	} cases[] = {
		{ "", false, 0, 0 },
		{ "<seclabel type='dynamic' model='dac' relabel='yes'><label>+64055:+108</label>"
		  "<imagelabel>+64055:+108</imagelabel></seclabel>", true, 64055, 108 },
		{ "<seclabel type='dynamic' model='selinux' relabel='yes'>"
		  "<label>system_u:system_r:svirt_t:s0:c1,c2</label></seclabel>", false, 0, 0 },
		{ "<seclabel type='static' model='dac'><label>qemu:kvm</label></seclabel>",
		  false, 0, 0 },
		{ "<seclabel type='dynamic' model='dac'><label>+1:+2x</label></seclabel>",
		  false, 0, 0 },
	};
	struct domxml_domain d;
	char *xml = fixture("wired", 3), *labelled;
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		labelled = with(xml, cases[i].seclabel);
		assert_int_equal(domxml_read(labelled, strlen(labelled), &default_conf, &d),
				 DOMXML_SERVE);
		if (d.has_owner != cases[i].has_owner)
			fail_msg("case %u: has_owner %d, wanted %d", i, d.has_owner,
				 cases[i].has_owner);
		if (d.has_owner) {
			assert_int_equal(d.owner_uid, cases[i].uid);
			assert_int_equal(d.owner_gid, cases[i].gid);
		}
		free(labelled);
	}
	free(xml);
}

static void test_sizes(void **state)
{
	struct domxml_domain d;
	char *xml, *at;

	(void)state;
	/* defined without <size>: libvirt writes the 4 MiB it makes */
	assert_int_equal(read_fixture("no-size", 3, &default_conf, &d), DOMXML_SERVE);
	assert_int_equal(d.shmem_bytes, 4 << 20);
	/* and XML without it at all is taken as libvirt would make it */
	xml = fixture("no-size", 3);
	at = strstr(xml, "<size unit='M'>4</size>");
	assert_non_null(at);
	memset(at, ' ', strlen("<size unit='M'>4</size>"));
	assert_int_equal(domxml_read(xml, strlen(xml), &default_conf, &d), DOMXML_SERVE);
	assert_int_equal(d.shmem_bytes, 4 << 20);
	free(xml);
	/* 4 GiB: RAM above 4 GiB too, a 2 MiB table in a 2 MiB <shmem> */
	if (read_fixture("gib-2", 3, &default_conf, &d) != DOMXML_SERVE)
		fail_msg("gib-2.xml not served: %s", d.why);
	assert_int_equal(d.ram_bytes, 4ULL << 30);
}

/* Each fixture the host must not serve, and the words of its one log line. */
static const struct {
	const char *fixture, *why;
	enum domxml_verdict verdict;
} verdicts[] = {
	{ "not-wired", "no <shmem> named pagehint", DOMXML_NOT_WIRED },
	{ "hostdev", "assigned host device (<hostdev>, VFIO)", DOMXML_REFUSE },
	{ "interface-hostdev", "assigned host device (<hostdev>, VFIO)", DOMXML_REFUSE },
	{ "vdpa", "vDPA device", DOMXML_REFUSE },
	{ "iommufd", "iommufd", DOMXML_REFUSE },
	{ "sev", "confidential guest (<launchSecurity>)", DOMXML_REFUSE },
	{ "locked", "memory is locked", DOMXML_REFUSE },
	{ "hugepages", "huge pages", DOMXML_REFUSE },
	{ "numa", "NUMA cells", DOMXML_REFUSE },
	{ "dimm", "memory devices or <maxMemory>", DOMXML_REFUSE },
	{ "not-shared", "RAM file is not shared", DOMXML_REFUSE },
	{ "not-file", "RAM is not in a file", DOMXML_REFUSE },
	{ "pc-machine", "not an x86_64 q35 machine", DOMXML_REFUSE },
	{ "small-shmem", "has 1048576 bytes, and its table needs 4194304 (<size unit='M'>4</size>",
	  DOMXML_REFUSE },
	{ "two-tables", "more than one pagehint <shmem>", DOMXML_REFUSE },
	{ "doorbell", "not <model type='ivshmem-plain'/>", DOMXML_REFUSE },
};

static void test_refusals(void **state)
{
	struct domxml_domain d;
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(verdicts) / sizeof(verdicts[0]); i++) {
		enum domxml_verdict v = read_fixture(verdicts[i].fixture, 5, &default_conf, &d);

		if (v != verdicts[i].verdict || !strstr(d.why, verdicts[i].why))
			fail_msg("%s.xml: verdict %d (\"%s\"), expected %d with \"%s\"",
				 verdicts[i].fixture, v, d.why, verdicts[i].verdict,
				 verdicts[i].why);
	}
}

static void test_not_xml(void **state)
{
	static const char junk[] = "<domain><name>x</name";
	struct domxml_domain d;

	(void)state;
	assert_int_equal(domxml_read(junk, strlen(junk), &default_conf, &d), DOMXML_REFUSE);
	assert_non_null(strstr(d.why, "does not parse"));
	assert_int_equal(domxml_read("<network/>", 10, &default_conf, &d), DOMXML_REFUSE);
	assert_non_null(strstr(d.why, "not a libvirt domain"));
}

static int metadata(const char *xml, struct domxml_metadata *m, char *why, size_t len)
{
	return domxml_metadata(xml, strlen(xml), m, why, len);
}

static void test_metadata(void **state)
{
	struct domxml_metadata m = { 0 };
	char why[256], *xml;

	(void)state;
	xml = fixture("wired", 4);
	assert_int_equal(domxml_metadata(xml, strlen(xml), &m, why, sizeof(why)), 0);
	assert_int_equal(m.target_mib, 200);
	assert_int_equal(m.policy, DOMXML_AGED);
	free(xml);
	/* as virDomainGetMetadata() answers, after virsh metadata --set */
	assert_int_equal(metadata("<pagehint target_mib=\"100\"/>", &m, why, sizeof(why)), 0);
	assert_int_equal(m.target_mib, 100);
	assert_int_equal(m.policy, DOMXML_POLICY_DEFAULT);
	assert_int_equal(metadata("<pagehint target_mib='none' policy='immediate'/>", &m, why,
				  sizeof(why)), 0);
	assert_int_equal(m.target_mib, -1);
	assert_int_equal(m.policy, DOMXML_IMMEDIATE);
	assert_int_equal(m.floor_mib, 0);
	assert_int_equal(m.weight, DOMXML_DEFAULT_WEIGHT);
	/* under a host budget */
	assert_int_equal(metadata("<pagehint floor_mib='512' weight='250'/>", &m, why, sizeof(why)),
			 0);
	assert_int_equal(m.target_mib, -1);
	assert_int_equal(m.floor_mib, 512);
	assert_int_equal(m.weight, 250);
	/* no pagehint metadata: no target, no floor, the default weight */
	m.target_mib = 5;
	xml = fixture("not-wired", 4);
	*strstr(xml, "urn:x-pagehint") = 'X';	/* another namespace's element */
	assert_int_equal(domxml_metadata(xml, strlen(xml), &m, why, sizeof(why)), 0);
	assert_int_equal(m.target_mib, -1);
	assert_int_equal(m.floor_mib, 0);
	assert_int_equal(m.weight, DOMXML_DEFAULT_WEIGHT);
	free(xml);
}

/* Bad metadata: one reason, and what the caller had stays. */
static const struct {
	const char *xml, *why;
} bad_metadata[] = {
	{ "<pagehint target_mib='lots'/>", "target_mib='lots' is not a decimal number" },
	{ "<pagehint target_mib='-5'/>", "target_mib='-5' is not a decimal number" },
	{ "<pagehint target_mib='1e3'/>", "target_mib='1e3' is not a decimal number" },
	{ "<pagehint target_mib=''/>", "target_mib='' is not a decimal number" },
	{ "<pagehint target_mib='16777217'/>", "target_mib='16777217' is over 16777216 MiB" },
	{ "<pagehint target_mib='99999999999999999999999'/>", "is not a decimal number" },
	{ "<pagehint policy='greedy'/>", "policy='greedy' is none of" },
	{ "<pagehint floor_mib='-1'/>", "floor_mib='-1' is not a decimal number of MiB" },
	{ "<pagehint floor_mib='16777217'/>", "floor_mib='16777217' is over 16777216 MiB" },
	{ "<pagehint weight='0'/>", "weight='0' is not a whole number from 1 to 10000" },
	{ "<pagehint weight='10001'/>", "weight='10001' is not a whole number from 1 to 10000" },
	{ "<pagehint weight='heavy'/>", "weight='heavy' is not a whole number" },
	{ "<pagehint target='100'/>", "unknown attribute target" },
	{ "<pagehint target_mib='100'><target>5</target></pagehint>", "unknown element <target>" },
	{ "<other target_mib='100'/>", "not a <pagehint> element" },
	{ "<pagehint target_mib='100'", "does not parse" },
};

static void test_bad_metadata(void **state)
{
	struct domxml_metadata m = { .target_mib = 300, .policy = DOMXML_PERIODIC, .floor_mib = 7,
				     .weight = 3 };
	char why[256];
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(bad_metadata) / sizeof(bad_metadata[0]); i++) {
		why[0] = 0;
		if (metadata(bad_metadata[i].xml, &m, why, sizeof(why)) != -1 ||
		    !strstr(why, bad_metadata[i].why))
			fail_msg("%s: taken, or \"%s\" without \"%s\"", bad_metadata[i].xml, why,
				 bad_metadata[i].why);
		if (m.target_mib != 300 || m.policy != DOMXML_PERIODIC || m.floor_mib != 7 ||
		    m.weight != 3)
			fail_msg("%s changed what the caller had", bad_metadata[i].xml);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wired),
		cmocka_unit_test(test_ram_paths),
		cmocka_unit_test(test_owner),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_not_xml),
		cmocka_unit_test(test_metadata),
		cmocka_unit_test(test_bad_metadata),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
