/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pagehintd's log: one line per event on stderr, with a priority.
 *
 * Under systemd, stderr is a stream to journald, which reads a leading
 * "<N>" (a syslog(3) priority, sd-daemon(3)) as the line's priority and
 * records the daemon's name itself; there each line is "<N>message".
 * Anywhere else (a terminal, the test runner's log files) a "<N>" would
 * be noise, so each line is "pagehintd: message", as it always was.
 * journald is recognised as systemd.exec(5) says: JOURNAL_STREAM names
 * the device and inode of stderr.  syslog(3) is not used: it would take
 * the lines away from a daemon run by hand or by the tests.
 */
#ifndef PAGEHINT_LOG_H
#define PAGEHINT_LOG_H

#include <stdbool.h>
#include <syslog.h>

/* Decide, once, whether stderr is journald's. */
void log_init(void);
bool log_to_journal(void);

/*
 * One line at @priority (LOG_ERR ... LOG_DEBUG).  Control characters
 * (some text comes from QEMU or the guest) become '?', so that a line
 * stays one line with its priority.
 */
void log_line(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
