// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the host's check of a table header, the first thing
 * pagehintd does with guest-written memory.  The input is a RAM file size
 * (8 bytes), a table size (8 bytes) and the header's bytes.  Whatever it
 * is, the check must neither crash nor accept a layout that reaches
 * outside the table or the RAM file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pagehint_header hdr;
	struct table t = { 0 };
	uint64_t ram_size, table_size;
	unsigned int i;
	char err[256];

	if (size < 16)
		return 0;
	memcpy(&ram_size, data, 8);
	memcpy(&table_size, data + 8, 8);
	/* sizes in reach of a real guest, so that some inputs pass */
	t.ram_size = ram_size % (1ULL << 40);
	t.table_size = table_size % (1ULL << 34);
	memset(&hdr, 0, sizeof(hdr));
	memcpy(&hdr, data + 16, size - 16 < sizeof(hdr) ? size - 16 : sizeof(hdr));
	if (table_check_header(&hdr, t.table_size, t.ram_size, err, sizeof(err)) == 0) {
		/* what the header check accepts lies inside table and file */
		for (i = 0; i < le32toh(hdr.nr_ranges); i++) {
			uint64_t first = le64toh(hdr.ranges[i].first_pfn);
			uint64_t n = le64toh(hdr.ranges[i].nr_frames);
			uint64_t off = le64toh(hdr.ranges[i].file_offset);

			/* written so that nothing here can wrap */
			if (first > le64toh(hdr.nr_frames) || n > le64toh(hdr.nr_frames) - first ||
			    off > t.ram_size || n > (t.ram_size - off) / 4096)
				abort();
		}
	}
	if (table_check(&hdr, &t, err, sizeof(err)) == 0) {
		/* and what the daemon uses is the RAM file's own layout */
		if (t.nr_ranges < 1 || t.nr_ranges > PAGEHINT_MAX_RANGES ||
		    t.nr_frames + PAGEHINT_HEADER_SIZE > t.table_size)
			abort();
		for (i = 0; i < t.nr_ranges; i++)
			if (t.ranges[i].file_offset > t.ram_size ||
			    t.ranges[i].nr_frames > (t.ram_size - t.ranges[i].file_offset) / 4096)
				abort();
	}
	return 0;
}
