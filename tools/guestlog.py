# SPDX-License-Identifier: GPL-2.0
"""Turn what a guest left behind (tools/vm.py Result) into test results.

Every result is a (name, passed, why) triple.  A guest counts as failed,
never as skipped, when it oopses, warns, times out or stops before the end
of its plan: each of those is a result of its own with a message that
names the cause.
"""

import contextlib
import io
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KUNIT_TOOLS = os.path.join(TOP, 'build', 'linux', 'tools', 'testing', 'kunit')
PLANS = os.path.join(TOP, 'guest', 'plans')

# What the guest's driver prints once it shares its page states
# (drivers/virt/pagehint/ivshmem.c).
ATTACHED = 'page hinting on'

# What pagehintd prints for each guest reset it turns into a new table
# epoch (host/pagehintd.c): a reboot, or a reset nobody asked for.
NEW_EPOCH = 'new table epoch'

# What the guest prints when the host holds a frame busy too long
# (drivers/virt/pagehint/table.c): a stopped host daemon.
BUSY_TOO_LONG = 'the host has held a frame busy for over 10 s'

# Lines the kernel prints only when something went wrong.
KERNEL_TROUBLE = re.compile(
    r'(BUG: |WARNING: |Oops|Kernel panic|kernel BUG at|general protection fault|'
    r'Call Trace:|UBSAN: |KASAN: |Unable to handle|'
    r'suspicious RCU usage|page dumped because|Bad page|'
    r'INFO: task .* blocked for more than|rcu: INFO: |detected stall|'
    r'watchdog: BUG: soft lockup|hard LOCKUP|' + re.escape(BUSY_TOO_LONG) + '|'
    # file systems and block devices: data the guest read wrong or could
    # not read, which its own checks might not reach
    r'EXT4-fs error|EXT4-fs warning|JBD2: .*error|I/O error|Buffer I/O error|'
    r'Read-error on swap-device|Write-error on swap-device|swap_dup: Bad swap|'
    r'SQUASHFS error|erofs \(device [^)]*\): .*(?:corrupt|bad |invalid|fail|error|cannot|unable)|'
    r'EROFS: .*(?:corrupt|bad|invalid)|Remounting filesystem read-only|'
    r'critical medium error|blk_update_request: |print_req_error)')

# Lines of a report that say nothing on their own (a trace's frames, the
# register dump, the tainted and hardware lines): the line that names the
# trouble comes before them.
REPORT_BODY = re.compile(
    r'^\s*(\[[ 0-9.]+\]\s*)?(Call Trace:|<TASK>|</TASK>|\?? ?\S+\+0x)|'
    r'(RIP|RSP|RAX|RDX|RBP|R1[0-5]|R[89]|FS|CS|CR2|Code|Hardware name|CPU:|[Tt]ainted|'
    r'Modules linked|"echo 0 >)')

# How much of a failed guest's console the runner prints: CI keeps only
# its own output, not the guest's logs.
CONSOLE_TAIL_LINES = 40


def kernel_trouble(console):
    """The first lines that name a kernel oops, BUG, WARN, stall or panic.
    A bare "Call Trace:" is replaced by the line that introduced it."""
    lines = console.splitlines()
    hits = []
    for i, line in enumerate(lines):
        if not KERNEL_TROUBLE.search(line):
            continue
        if 'Call Trace:' in line:
            j = i - 1
            while j >= 0 and REPORT_BODY.search(lines[j]):
                j -= 1
            line = lines[j] if j >= 0 else line
        line = line.strip()
        if line not in hits:
            hits.append(line)
    return hits[:4]


def console_excerpt(console, lines=CONSOLE_TAIL_LINES):
    """The console's last lines, for a run that failed on a machine whose
    files nobody will read afterwards."""
    tail = [l.rstrip() for l in console.splitlines() if l.strip()][-lines:]
    return '\n'.join('    | ' + l for l in tail)


def plan_tests(plan):
    """The names of a plan's tests, in order, read as guest/init reads it."""
    with open(os.path.join(PLANS, plan)) as f:
        return [l.split(':', 1)[0] for l in f.read().splitlines()
                if l.strip() and not l.startswith('#')]


def plan_ran_once(result, name, starts):
    """Each of the plan's tests reported exactly once, and the plan started
    STARTS times: a guest that reset and ran its plan again, or stopped
    in the middle of a test, shows here even when pagehintd took the reset
    quietly."""
    tap = result.tap
    reported = [m.group(1) for m in re.finditer(r'^test: (?:ok|not ok) (\S+)', tap, re.M)]
    started = len(re.findall(r'^plan: start ', tap, re.M))
    problems = []
    if started != starts:
        problems.append('the plan started %d times, not %d' % (started, starts))
    expected = plan_tests(result.plan)
    for test in expected:
        n = reported.count(test)
        if n != 1:
            problems.append('%s reported %d times' % (test, n))
    strangers = sorted(set(reported) - set(expected))
    if strangers:
        problems.append('tests not in the plan: ' + ', '.join(strangers))
    return (name + ': ran each test of its plan once', not problems, '; '.join(problems[:4]))


def resets_seen(result, name, resets):
    """pagehintd names every guest reset it turned into a new epoch; a
    triple fault is one of them, and nothing else would show it."""
    said = [l for l in result.read('pagehintd.log').splitlines() if NEW_EPOCH in l]
    return (name + ': the guest reset %d times' % resets, len(said) == resets,
            '%d resets in pagehintd.log%s' % (len(said), ': ' + ' / '.join(said[:3])
                                               if said else ''))


# What pagehintd says only when something went wrong (host/pagehintd.c)
DAEMON_TROUBLE = re.compile(r'failed|refused|could not|cannot|no memory|unknown|needs --|'
                            r'wants a|out of range|does not take|unexpected argument|'
                            r'exclude each other|AddressSanitizer|runtime error')


def daemon_ended_well(result, name):
    """Every pagehintd of the run ended as the test meant it to (tools/vm.py
    DaemonExit) and said nothing that only trouble makes it say: a daemon
    that aborted once the scenario's thresholds were met would otherwise
    go unseen."""
    problems = [e.trouble() for e in result.daemon_exits if e.trouble()]
    if not result.daemon_exits:
        problems.append('no pagehintd ran')
    said = [l.strip() for l in result.read('pagehintd.log').splitlines()
            if DAEMON_TROUBLE.search(l)]
    if said:
        problems.append('pagehintd.log: ' + ' / '.join(said[:3]))
    return (name + ': pagehintd ended as asked and reported no trouble', not problems,
            '; '.join(problems) if problems else
            ', '.join('%d exit %d' % (e.pid, e.returncode) for e in result.daemon_exits))


def guest_tests(tap):
    """The plan's tests; a failure carries the last lines the test printed."""
    results, output = [], {}
    for line in tap.splitlines():
        line = line.rstrip('\r')
        m = re.match(r'log: (\S+): (.*)', line)
        if m:
            output.setdefault(m.group(1), []).append(m.group(2))
            continue
        m = re.match(r'test: (ok|not ok) (\S+) ?(.*)', line.strip())
        if m:
            passed, name, why = m.group(1) == 'ok', m.group(2), m.group(3)
            if not passed and output.get(name):
                why += ' (it printed: %s)' % ' | '.join(output[name][-3:])
            results.append(('guest: ' + name, passed, why))
    return results


def kunit_documents(tap):
    """Split the 'kunit:' records into one KTAP document per suite."""
    docs, cur = [], None
    for line in tap.splitlines():
        if not line.startswith('kunit: '):
            continue
        body = line[len('kunit: '):]
        if body.startswith('KTAP version') and not body.startswith(' '):
            cur = []
            docs.append(cur)
        if cur is not None:
            cur.append(body + '\n')
    return docs


def kunit_cases(tap):
    """Every KUnit test case as a result, parsed by the kernel's own parser."""
    if KUNIT_TOOLS not in sys.path:
        sys.path.insert(0, KUNIT_TOOLS)
    import kunit_parser
    import kunit_printer
    kunit_parser.stdout = kunit_printer.Printer(io.StringIO())
    results = []

    def leaves(test, prefix):
        if not test.subtests:
            # A skipped case proved nothing: the guest is built so that
            # every case can run.
            ok = test.status == kunit_parser.TestStatus.SUCCESS
            why = '' if ok else '%s: %s' % (test.status.name,
                                            ' | '.join(l.strip() for l in test.log[-6:]))
            results.append(('kunit: ' + prefix + test.name, ok, why))
        for sub in test.subtests:
            leaves(sub, prefix + test.name + '.' if test.name else prefix)

    for doc in kunit_documents(tap):
        with contextlib.redirect_stdout(io.StringIO()):
            top = kunit_parser.parse_run_tests(doc)
        if not top.subtests:
            results.append(('kunit: unparsable results', False, ''.join(doc[:5])))
            continue
        for suite in top.subtests:
            leaves(suite, '')
    return results


def suites_seen(results):
    return {name.split(': ', 1)[1].split('.')[0] for name, _, _ in results
            if name.startswith('kunit: ')}


def evaluate(result, name, expect_suites=(), expected_console=(), starts=1, resets=0,
             attached=False):
    """All results of one guest run, the run itself included.  KUnit runs
    only in the boots made for it (EXPECT_SUITES: {suite: cases} that must
    be there, each case by name).  Console lines that hold one of EXPECTED_CONSOLE were
    provoked on purpose: they are not trouble.  STARTS: how often the plan
    must start (a reboot plan: twice); RESETS: how many guest resets
    pagehintd must have seen, when it ran; ATTACHED: the guest must say
    that it shares its page states."""
    tap, console = result.tap, result.console
    kunit = kunit_cases(tap)
    results = guest_tests(tap) + kunit
    seen = {name for name, _, _ in kunit}
    for suite, cases in dict(expect_suites).items():
        if suite not in suites_seen(results):
            results.append(('kunit: ' + suite, False,
                            'suite did not run (missing from debugfs)'))
            continue
        for case in cases:
            if 'kunit: %s.%s' % (suite, case) not in seen:
                results.append(('kunit: %s.%s' % (suite, case), False,
                                'the case did not run: not in the suite\'s results'))
    if not expect_suites and kunit:
        results.append((name + ': KUnit ran only where asked', False,
                        '%d KUnit cases ran in a boot that switched KUnit off' % len(kunit)))
    where = ' (console: %s)' % os.path.join(result.run_dir, 'console.log')
    results.append(plan_ran_once(result, name, starts))
    if result.daemon:
        results.append(resets_seen(result, name, resets))
        results.append(daemon_ended_well(result, name))
    if attached:
        n = console.count(ATTACHED)
        results.append((name + ': hinting attached', n == starts,
                        '"%s" %d times, once a boot wanted%s' % (ATTACHED, n, where)))
    if result.status == 'timeout':
        results.append((name + ': finished', False,
                        'guest timed out after %.0f s; it hung or is too slow%s'
                        % (result.elapsed, where)))
    elif result.status == 'stalled':
        results.append((name + ': finished', False,
                        'guest said nothing for too long and was stopped after %.0f s; '
                        'it hung%s' % (result.elapsed, where)))
    elif 'plan: done' not in tap:
        qemu = result.read('qemu.log').strip()
        results.append((name + ': finished', False,
                        'guest stopped before the end of its plan (QEMU exit %s%s)%s'
                        % (result.returncode, ': ' + qemu[-300:] if qemu else '', where)))
    else:
        results.append((name + ': finished', True, '%.1f s' % result.elapsed))
    for expected in expected_console:
        results.append((name + ': the console says "%s"' % expected, expected in console,
                        '' if expected in console else 'it never did' + where))
    console = '\n'.join(l for l in console.splitlines()
                        if not any(e in l for e in expected_console))
    trouble = kernel_trouble(console)
    if 'Linux version' not in console:
        trouble = ['nothing: the console has no boot banner (%d bytes)' % len(console)]
    results.append((name + ': no oops or warning', not trouble,
                    'kernel said: ' + ' / '.join(trouble) + where if trouble else ''))
    if not all(passed for _, passed, _ in results):
        print('%s: the console ended with:\n%s' % (name, console_excerpt(console)),
              flush=True)
        first = first_trouble_block(console)
        if first:
            print('%s: the first trouble on the console:\n%s' % (name, first), flush=True)
        for what, text in (('where its vCPUs were before it was killed', result.read('hang.txt')),
                           ("pagehintd's last status", last_line(result.read('pagehintd.jsonl'))),
                           ('pagehintd said', result.read('pagehintd.log'))):
            if text.strip():
                print('%s: %s:\n%s' % (name, what, '\n'.join(
                    '    | ' + l for l in text.strip().splitlines()[-12:])), flush=True)
    return results


def last_line(text):
    lines = text.strip().splitlines()
    return lines[-1] if lines else ''


def first_trouble_block(console, before=5, after=35):
    """The lines around the kernel's first complaint (its headline and the
    trace that follows), unless the console's tail already shows them."""
    lines = console.splitlines()
    for i, line in enumerate(lines):
        if KERNEL_TROUBLE.search(line):
            if i >= len(lines) - CONSOLE_TAIL_LINES:
                return ''
            block = lines[max(0, i - before):i + after]
            return '\n'.join('    | ' + l.rstrip() for l in block)
    return ''
