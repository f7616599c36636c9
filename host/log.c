// SPDX-License-Identifier: GPL-2.0
/* pagehintd's log (log.h). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

static bool journal;

void log_init(void)
{
	const char *stream = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char end;

	journal = stream && sscanf(stream, "%llu:%llu%c", &dev, &ino, &end) == 2 &&
		  !fstat(STDERR_FILENO, &st) && st.st_dev == dev && st.st_ino == ino;
}

bool log_to_journal(void)
{
	return journal;
}

void log_line(int priority, const char *fmt, ...)
{
	char line[1024];
	size_t n, start, i;
	va_list ap;

	if (journal)
		n = snprintf(line, sizeof(line), "<%d>", LOG_PRI(priority));
	else
		n = snprintf(line, sizeof(line), "pagehintd: ");
	start = n;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	n = strlen(line);
	for (i = start; i < n; i++)
		if ((unsigned char)line[i] < ' ' || line[i] == 0x7f)
			line[i] = '?';
	line[n++] = '\n';
	/* one write: lines of processes that share the stream stay whole */
	(void)!write(STDERR_FILENO, line, n);
}
