// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: qmp_parse(), which reads every line QEMU's socket
 * delivers.  Whatever the line, it must neither crash nor leave a field
 * unterminated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../qmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qmp_message m;
	char *line = malloc(size + 1);

	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = 0;
	qmp_parse(line, &m);
	if (strnlen(m.event, sizeof(m.event)) == sizeof(m.event) ||
	    strnlen(m.reason, sizeof(m.reason)) == sizeof(m.reason) ||
	    strnlen(m.status, sizeof(m.status)) == sizeof(m.status) ||
	    strnlen(m.error, sizeof(m.error)) == sizeof(m.error))
		abort();
	free(line);
	return 0;
}
