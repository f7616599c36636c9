#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The test runner behind "make check".

  check.py all            every stage below, then "N passed, N failed"
  check.py stage NAME...  only the named stages (host, series, guest,
                          hinting, selftests_mm, selftest)
  check.py boot PLAN      boot the guest once with PLAN and judge the run

Stages: host unit tests, the patch series (exported, checkpatch --strict),
the guest (its tests, KUnit, a clean console), hinting end to end, the
kernel's own selftests/mm with hinting off and on, and the runner's own
self-test: a failing guest test, a failing KUnit case and a hung guest
must each fail a run, with a message that names the cause.
Exits non-zero when anything failed.
"""

import argparse
import bisect
import ctypes
import json
import mmap
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guestlog  # noqa: E402
import libvirt_check  # noqa: E402
import vm  # noqa: E402

TOP = vm.TOP
PATCHES = os.path.join(TOP, 'kernel', 'patches')

# Every KUnit case a boot must run, by suite: the one place that says
# which cases the series has.  A case missing from a boot's results (a
# case deleted, renamed or compiled out, a suite that did not run) is a
# failure, not a silently smaller count.  KUnit runs in the check boot,
# the s390 boot and the runner's KUnit self-test only (tools/vm.py,
# kunit.enable=0 in every other).
KUNIT_CASES = {
    # mm/page_states_volatile_kunit.c
    'page_states_volatile': (
        'volatile_clean_cache_qualifies', 'volatile_not_dirty', 'volatile_not_under_writeback',
        'volatile_only_uptodate', 'volatile_no_private_data', 'volatile_no_other_user',
        'volatile_mapped_needs_discard_fault', 'volatile_needs_a_file_to_reread',
        'volatile_only_where_reads_repeat', 'volatile_not_unevictable', 'volatile_not_swap_backed',
        'volatile_clean_swap_cache_qualifies', 'volatile_swap_cache_not_dirty',
        'volatile_swap_cache_not_under_writeback', 'volatile_swap_cache_no_other_user',
        'volatile_swap_cache_not_ksm', 'volatile_swap_cache_not_large',
        'volatile_rest_doubles_within_bounds', 'volatile_scan_needs_two_idle_looks',
        'volatile_scan_access_starts_over', 'volatile_scan_leaves_what_may_not_be',
        'volatile_scan_budget_follows_the_host', 'volatile_debug_unmaps_on_every_cpu'),
    # drivers/virt/pagehint/table_kunit.c
    'pagehint_table': (
        'pagehint_table_accepts_good_header', 'pagehint_table_refuses_bad_headers',
        'pagehint_summary_marks_chunks', 'pagehint_frame_free_and_allocate',
        'pagehint_free_frames_are_unused', 'pagehint_frame_dropped_stays_dropped',
        'pagehint_frame_garbage_becomes_stable', 'pagehint_frame_waits_for_busy',
        'pagehint_frame_volatile_and_back', 'pagehint_frame_only_stable_becomes_volatile',
        'pagehint_frame_volatile_dropped_is_reported', 'pagehint_frame_volatile_waits_for_busy',
        'pagehint_frame_detach_waits_for_busy'),
    # arch/s390/mm/page-states_kunit.c
    's390_page_states': (
        'essa_free_frames_are_unused', 'essa_alloc_stable_free_unused', 'essa_volatile_and_back',
        'essa_discard_fault_fails_a_nofault_read'),
    # guest/kunit-fail: the runner's self-test
    'pagehint_runner_selftest': ('pagehint_selftest_fails', 'pagehint_selftest_passes'),
}
KUNIT_BOOTS = {'check': ('page_states_volatile', 'pagehint_table'),
               's390': ('s390_page_states', 'page_states_volatile'),
               'selftest-kunit': ('pagehint_runner_selftest',)}


def kunit_expected(boot):
    """{suite: cases} that BOOT must run."""
    return {suite: KUNIT_CASES[suite] for suite in KUNIT_BOOTS.get(boot, ())}


def say(name, passed, why=''):
    print('%s %s%s' % ('ok  ' if passed else 'FAIL', name, ': ' + why if why else ''),
          flush=True)


def run_cmd(cmd, **kw):
    return subprocess.run(cmd, cwd=TOP, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, **kw)


def host_list(what):
    """host/Makefile's list of unit tests (list-tests) or scripted checks
    (list-checks): the one place that names them."""
    p = run_cmd(['make', '-s', '--no-print-directory', '-C', 'host', 'list-' + what])
    if p.returncode != 0 or not p.stdout.split():
        raise RuntimeError('make -C host list-%s: %s' % (what, p.stdout.strip()))
    return p.stdout.split()


def stage_host():
    """Host unit tests, as shipped and under ASan and UBSan: every test
    binary prints cmocka's TAP; then host/tests' scripted checks (the table
    format against the series, ...), each one result."""
    try:
        tests, checks = host_list('tests'), host_list('checks')
    except RuntimeError as e:
        return [('host: host/Makefile names its tests', False, str(e))]
    results = []
    for build, label in (('host', 'host'), (os.path.join('host', 'san'), 'host, ASan+UBSan')):
        for name in tests:
            test = os.path.join(TOP, 'build', build, name)
            name = '%s: %s' % (label, name)
            if not os.access(test, os.X_OK):
                results.append((name, False, '%s is missing: run "make host"' % test))
                continue
            p = run_cmd([test], env=dict(os.environ, CMOCKA_MESSAGE_OUTPUT='TAP'))
            cases = re.findall(r'^(ok|not ok) \d+ - (.*)$', p.stdout, re.M)
            for status, case in cases:
                results.append(('%s.%s' % (name, case), status == 'ok',
                                '' if status == 'ok' else p.stdout[-800:]))
            if not cases:
                results.append((name, False, 'no test cases reported: ' + p.stdout[-800:]))
            elif p.returncode != 0 and all(s == 'ok' for s, _ in cases):
                # a sanitizer's report ends the program after the last "ok"
                results.append((name, False,
                                'exit status %d: %s' % (p.returncode, p.stdout[-800:])))
    for name in checks:
        p = run_cmd([os.path.join(TOP, 'host', 'tests', name)])
        results.append(('host: ' + name, p.returncode == 0, p.stdout.strip()[-800:]))
    results += fuzz()
    return results


# Inputs per fuzz target in make check: seconds on any machine; make fuzz
# runs them for minutes.
FUZZ_RUNS = 1000000


def fuzz():
    """The fuzz targets (host/fuzz), each for FUZZ_RUNS inputs."""
    p = run_cmd([os.path.join(TOP, 'host', 'fuzz', 'run.sh'), '-runs=%d' % FUZZ_RUNS])
    results = []
    for name, out in re.findall(r'^fuzz: (\w+)\n(.*?)(?=^fuzz: |\Z)', p.stdout, re.M | re.S):
        done = re.search(r'^Done (\d+) runs', out, re.M)
        results.append(('host: fuzz_%s, %d inputs' % (name, FUZZ_RUNS),
                        bool(done) and int(done.group(1)) >= FUZZ_RUNS,
                        '' if done else out[-800:]))
    if len(results) != 2 or p.returncode != 0:
        results.append(('host: fuzz targets ran', False,
                        'exit status %d: %s' % (p.returncode, p.stdout[-800:])))
    return results


def stage_series():
    results = []
    p = run_cmd([os.path.join(TOP, 'kernel', 'tree.sh'), 'check'])
    results.append(('series: build/linux is exported to kernel/patches', p.returncode == 0,
                    p.stdout.strip()))
    checkpatch = os.path.join(TOP, 'build', 'linux', 'scripts', 'checkpatch.pl')
    series = os.path.join(PATCHES, 'series')
    if not os.path.exists(series):
        return results
    # checkpatch reads a file that git tracks as a source file, not as a
    # patch: check copies outside the repository.
    scratch = tempfile.mkdtemp()
    for patch in open(series).read().split():
        shutil.copy(os.path.join(PATCHES, patch), scratch)
        p = subprocess.run(['perl', checkpatch, '--strict', '--no-tree', '--terse', patch],
                           cwd=scratch, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        problems = [l for l in p.stdout.splitlines() if re.search(r'(ERROR|WARNING|CHECK):', l)]
        results.append(('series: checkpatch --strict ' + patch, not problems and p.returncode == 0,
                        ' / '.join(problems[:3])))
    shutil.rmtree(scratch)
    # The page flag against a distribution's configuration, not only the
    # tinyconfig-based guest's (kernel/distro-flags.sh says why).
    p = run_cmd([os.path.join(TOP, 'kernel', 'distro-flags.sh')])
    layout = [l.strip() for l in p.stdout.splitlines() if re.search(r'flags \(PG_|bits used', l)]
    results.append(("series: PG_cache_volatile fits page->flags with Debian's amd64 config",
                    p.returncode == 0 and 'distro-flags: PG_cache_volatile fits' in p.stdout,
                    ' / '.join(layout) if p.returncode == 0 else p.stdout.strip()[-600:]))
    return results


def host_sees_unused(guest):
    """The check boot runs no pagehintd, but the table is the host's: once
    the guest says it attached, the frames it marked unused must be there,
    read by the host from the table file (not the guest's own count)."""
    name = 'guest: the host sees the frames the guest marked unused in the table'
    try:
        if not wait_for(lambda: 'mark: host may look' in guest.read('tap.log')
                        or guest.proc.poll() is not None, guest.timeout, step=0.2):
            return [(name, False, 'the guest never got to the step (no mark in tap.log)')]
        states = read_table(guest)[0]
        unused = sum(states.count(s) for s in (UNUSED, UNUSED_DROPPED))
        with open(guest.path('table'), 'rb') as f:
            epoch = struct.unpack_from('<Q', f.read(64), GUEST_EPOCH_AT)[0]
        return [(name, unused > 10000 and epoch != 0,
                 '%d frames unused in the table (wanted > 10000), guest epoch %#x (0: detached)'
                 % (unused, epoch))]
    finally:
        guest.tell('looked')


# What the host does while a plain boot runs, where the plan needs it
BOOT_SCENARIOS = {'check': host_sees_unused}


def boot(plan, timeout=600, mem_mib=512):
    """Boot PLAN once, without pagehintd; KUnit runs where KUNIT_BOOTS says."""
    guest = vm.Guest(plan, plan=plan, mem_mib=mem_mib, timeout=timeout, kunit=plan in KUNIT_BOOTS)
    results, result = run_with_scenario(guest, BOOT_SCENARIOS.get(plan))
    return results + guestlog.evaluate(result, 'boot ' + plan, kunit_expected(plan))


def stage_guest():
    return boot('check')


# What the s390 guest and the project's QEMU say when ESSA reaches the table
S390_ATTACHED = 'page_states: on: '
S390_QEMU_ATTACHED = 's390 page states: attached to epoch'
S390_NO_ESSA = 'page_states: s390: no ESSA on this machine'
S390_NO_STATES = 'page_states: s390: the host keeps no page states: hinting off'
S390_BAD_MAGIC = 's390 page states: not attached: no page-state table in the region (bad magic)'


def s390_boot(name, plan, stock_qemu=False, daemon_args=None, cmdline='', kunit=False,
              table=True, prepare=None, scenario=None):
    # the timeout is a safety net: the hinted plan's steps wait for events,
    # each bounded on its own, and took 900 s under a loaded machine
    guest = vm.Guest(name, plan=plan, variant='s390', mem_mib=1024, timeout=2400,
                     cmdline=cmdline, daemon_args=daemon_args, kunit=kunit,
                     stock_qemu=stock_qemu, s390_table=table, before_qemu=prepare)
    scenario_results, result = run_with_scenario(guest, scenario)
    result.scenario = scenario_results
    return result


S390_EPOCH_LOST = 's390 page states: the host started a new epoch under the running guest'


def s390_new_epoch_scenario(guest):
    """Once the guest's data disk cache is volatile and pagehintd --chaos
    has dropped it, stop the daemon and start a new epoch in the table as
    pagehintd's table_reset() does, then plug in vdc to tell the guest."""
    name = 's390-new-epoch: the host dropped the volatile cache before the epoch'
    if not wait_for(lambda: 'mark: volatile' in guest.read('tap.log'), 600, step=0.2):
        return [(name, False, 'the guest never marked its cache volatile')]
    dropped = wait_for(lambda: [s for s in status_lines(guest)
                                if s['dropped']['volatile'] >= 8000], MISSING_AFTER_S, step=0.2)
    if not dropped:
        return [(name, False, 'pagehintd dropped fewer than 8000 volatile frames')]
    guest.stop_daemon()
    # table_reset(): a new host epoch, every frame stable, no summary bit,
    # the guest detached
    with open(guest.path('table'), 'r+b') as f:
        m = mmap.mmap(f.fileno(), 0)
    try:
        _, _, header_size, _, _, nr_frames = TABLE_HEADER.unpack_from(m)
        summary, = struct.unpack_from('<Q', m, SUMMARY_OFFSET_AT)
        summary_bytes = (nr_frames + 64 * 512 - 1) // (64 * 512) * 8
        m[HOST_EPOCH_AT:HOST_EPOCH_AT + 8] = struct.pack('<Q', int.from_bytes(
            os.urandom(8), 'little') | 1)
        m[header_size:header_size + nr_frames] = bytes(nr_frames)
        m[summary:summary + summary_bytes] = bytes(summary_bytes)
        m[GUEST_EPOCH_AT:GUEST_EPOCH_AT + 8] = bytes(8)
    finally:
        m.close()
    disk = guest.path('signal.img')
    with open(disk, 'wb') as f:
        f.truncate(1 << 20)
    vm.qmp_hmp(guest.path('monitor.sock'),
               'drive_add 0 if=none,id=signal,format=raw,file=%s' % disk)
    vm.qmp_hmp(guest.path('monitor.sock'),
               'device_add virtio-blk-ccw,drive=signal,devno=fe.0.0004')
    results = [(name, True, '%d volatile frames dropped, then a new epoch'
                % dropped[-1]['dropped']['volatile'])]
    # The guest stops at its power-off for the daemon, which is gone: end
    # QEMU once the plan is done.
    if wait_for(lambda: 'plan: done' in guest.read('tap.log'), 600, step=0.2):
        try:
            vm.qmp_hmp(guest.path('monitor.sock'), 'quit')
        except (OSError, ValueError):
            pass        # QEMU went before it answered
    return results


def s390_host_looks(guest):
    """Once the guest has read its dropped cache again, and waits for the
    word "looked": the RAM file must hold none of the frames the table
    says pagehintd dropped, most of a fresh guest's memory among them."""
    name = 's390: the host holds no frame the table says it dropped'
    try:
        if not wait_for(lambda: 'mark: s390 host may look' in guest.read('tap.log')
                        or guest.proc.poll() is not None, 600, step=0.2):
            return [(name, False, 'the guest never got to the step (no mark in tap.log)')]
        return [holds_nothing_dropped(guest, name, 65536)]
    finally:
        guest.tell('looked')


def stage_s390():
    """The seeds' own architecture: the s390 guest sets frame states with
    ESSA, which the project's QEMU (qemu/patches) emulates under TCG
    against the page-state table that pagehintd serves.  The same guest on
    Debian's QEMU, which has no ESSA, runs unhinted and says so."""
    result = s390_boot('s390', 's390', daemon_args=['--chaos'], kunit=True,
                       cmdline='page_states.volatile_scan_ms=100', scenario=s390_host_looks)
    where = ' (logs: %s)' % result.run_dir
    qemu = result.read('qemu.log')
    status = [json.loads(l) for l in result.read('pagehintd.jsonl').splitlines()
              if l.startswith('{') and l.endswith('}')]
    dropped = status[-1]['dropped'] if status else {'unused': 0, 'volatile': 0}
    m = re.search(r'^%s(\d+) free frames marked unused$' % S390_ATTACHED, result.console, re.M)
    marked = int(m.group(1)) if m else 0
    results = result.scenario + [
        ('s390: QEMU attached the table to ESSA', S390_QEMU_ATTACHED in qemu,
         'qemu.log: %s%s' % (qemu.strip()[-200:], where)),
        ('s390: the guest attached its ESSA backend',
         result.console.count(S390_ATTACHED) == 1,
         '"%s" %d times, once wanted%s' % (S390_ATTACHED, result.console.count(S390_ATTACHED),
                                           where)),
        # most of a fresh 1 GiB guest is free: the attach marks it unused
        ('s390: the attach marked the free frames unused', marked >= 131072,
         '"%s%d free frames marked unused", at least 131072 wanted%s'
         % (S390_ATTACHED, marked, where)),
        # the guest's states reached the host: it dropped both kinds, the
        # free frames the attach marked and the cache the plan read again
        # (s390_host_looks: and the RAM file does not hold them)
        ('s390: pagehintd dropped unused and volatile frames',
         dropped['unused'] >= 131072 and dropped['volatile'] >= 8000,
         'dropped %d unused (wanted >= 131072), %d volatile (wanted >= 8000)%s'
         % (dropped['unused'], dropped['volatile'], where)),
    ]
    # Mapped page cache went volatile, the host dropped it under the
    # mappings, and what they read afterwards came back through the
    # discard fault: mapverify's last line and the step's count of faults.
    verified = re.search(r'^log: mapped-volatile: mapverify: \d+ passes, \d+ mapped frames '
                         r'went volatile, 0 bytes differ$', result.tap, re.M)
    faults = re.search(r'^log: mapped-volatile: vmdelta: page_states_discard_faults rose by (\d+)',
                       result.tap, re.M)
    results.append(('s390: mapped folios the host dropped came back through the discard fault',
                    bool(verified and faults and int(faults.group(1)) > 0),
                    'tap.log: %s; %s%s' % (
                        verified.group(0) if verified else 'no "mapverify: N passes, ..., 0 bytes differ"',
                        faults.group(0) if faults else 'no count of discard faults', where)))
    truncated = ('log: mapped-truncate: mapverify: truncated: 0 bytes differ, '
                 'SIGBUS past the end')
    results.append(('s390: truncation under a mapping the host dropped leaves the rest intact',
                    truncated in result.tap.splitlines(),
                    'wanted "%s" in tap.log%s' % (truncated, where)))
    # The one case that needs a second CPU skips, for the reason it gives:
    # QEMU's ESSA table takes one vCPU (qemu/patches, 0002).
    one_cpu = 'volatile_debug_unmaps_on_every_cpu # SKIP needs a second CPU'
    for r in guestlog.evaluate(result, 'boot s390',
                               expect_suites=kunit_expected('s390')):
        if r[0] == 'kunit: page_states_volatile.volatile_debug_unmaps_on_every_cpu':
            r = (r[0] + ' (skips: one vCPU)', one_cpu in result.tap,
                 'wanted "%s" in tap.log' % one_cpu)
        results.append(r)

    result = s390_boot('s390-stock', 's390-unhinted', stock_qemu=True)
    results.append(('s390-stock: the guest says it has no ESSA',
                    S390_NO_ESSA in result.console and S390_ATTACHED not in result.console,
                    'console (%s) has %s"%s"' % (result.run_dir,
                                                 '' if S390_NO_ESSA in result.console else 'no ',
                                                 S390_NO_ESSA)))
    results += guestlog.evaluate(result, 'boot s390-stock')

    # The project's QEMU without a table emulates ESSA for a host that keeps
    # no states: the guest asks once, and leaves hinting off.
    result = s390_boot('s390-no-table', 's390-unhinted', table=False)
    results.append(('s390-no-table: the guest finds that the host keeps no states',
                    S390_NO_STATES in result.console and S390_ATTACHED not in result.console,
                    'console (%s) has %s"%s"' % (result.run_dir,
                                                 '' if S390_NO_STATES in result.console
                                                 else 'no ', S390_NO_STATES)))
    results += guestlog.evaluate(result, 'boot s390-no-table')

    # QEMU reads a header the host wrote: a bad one is refused, with the
    # reason, and the guest runs as on a host that keeps no states.
    def bad_magic(guest):
        with open(guest.path('table'), 'r+b') as f:
            f.write(b'NOTATABL')
    result = s390_boot('s390-bad-table', 's390-unhinted', prepare=bad_magic)
    qemu = result.read('qemu.log')
    results.append(('s390-bad-table: QEMU refuses the table and says why',
                    S390_BAD_MAGIC in qemu and S390_NO_STATES in result.console,
                    'qemu.log: %s; the guest %s "%s"' % (
                        qemu.strip()[-200:] or '(empty)',
                        'says' if S390_NO_STATES in result.console else 'does not say',
                        S390_NO_STATES)))
    results += guestlog.evaluate(result, 'boot s390-bad-table')

    result = s390_boot('s390-new-epoch', 's390-epoch', daemon_args=['--chaos'],
                       cmdline='page_states.volatile_scan_ms=100',
                       scenario=s390_new_epoch_scenario)
    qemu = result.read('qemu.log')
    results += result.scenario
    results.append(('s390-new-epoch: QEMU counts what was volatile as dropped',
                    S390_EPOCH_LOST in qemu, 'qemu.log: %s' % (qemu.strip()[-300:] or '(empty)')))
    # pagehintd stopped on purpose: no reset to count
    return results + guestlog.evaluate(result, 'boot s390-new-epoch')


def wait_for(pred, timeout, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(step)
    return None


def hinted_boot(plan, scenario, mem_mib=1024, timeout=300, prepare=None, daemon=True,
                daemon_args=(), cmdline='', name=None, expected_console=(), starts=1,
                resets=0, attached=True, share_data=False):
    """Boot PLAN with pagehintd; SCENARIO(guest) acts on the running guest
    and returns its own results.  The run's results come after them.
    NAME (default: PLAN) names the boot in the results and build/logs/.
    EXPECTED_CONSOLE: complaints the scenario provokes on purpose; each
    must appear, and does not count as trouble.  STARTS, RESETS and
    ATTACHED: see guestlog.evaluate."""
    name = name or plan
    guest = vm.Guest(name, plan=plan, mem_mib=mem_mib, timeout=timeout, cmdline=cmdline,
                     daemon_args=list(daemon_args) if daemon else None, before_qemu=prepare,
                     share_data=share_data)
    results, result = run_with_scenario(guest, scenario)
    return results + guestlog.evaluate(result, 'boot ' + name, expected_console=expected_console,
                                       starts=starts, resets=resets, attached=attached)


def run_with_scenario(guest, scenario):
    """Boot GUEST; SCENARIO(guest), if any, acts on it while it runs.
    Returns the scenario's results and the run's Result."""
    results = []
    try:
        guest.start()
        if scenario:
            try:
                results = scenario(guest)
            except (OSError, ValueError, KeyError) as e:
                results = [('boot %s: scenario' % guest.name, False, 'it broke off: %r' % e)]
        result = guest.wait()
    finally:
        guest.cleanup()
    return results, result


# How long a check waits for what must happen before it calls it missing.
# Only a failing check waits this long: how fast it happens is the
# benchmark's business (make bench), never a pass/fail criterion.
MISSING_AFTER_S = 120


def give_back_scenario(guest):
    """512 MiB freed in the guest must leave the host, however slow the
    machine; the time it took is printed, not judged."""
    name = 'hinting: 512 MiB freed in the guest leaves the host'
    if not wait_for(lambda: 'mark: allocated' in guest.read('tap.log'), 300):
        return [(name, False, 'the guest never allocated (no mark in tap.log)')]
    before = guest.resident_mib()
    if not wait_for(lambda: 'mark: freed' in guest.read('tap.log'), 300, step=0.005):
        return [(name, False, 'the guest never freed (no mark in tap.log)')]
    freed_at = time.monotonic()
    target = before - 0.99 * 512
    done = wait_for(lambda: guest.resident_mib() <= target, MISSING_AFTER_S, step=0.01)
    took = time.monotonic() - freed_at
    after = guest.resident_mib()
    # The policy the boot asked for, or the default: aged, 2 s.
    args = list(guest.daemon_args)
    policy = args[args.index('--policy') + 1] if '--policy' in args else 'aged'
    said = {'aged': 'pagehintd: policy aged: a frame goes back once it stayed unused for 2000 ms',
            'immediate': 'pagehintd: policy immediate'}[policy]
    ran = said + '\n' in guest.read('pagehintd.log')
    return [(name, bool(done),
             'host held %.0f MiB when the guest had allocated, %.0f MiB %.2f s after the free '
             '(wanted <= %.0f)' % (before, after, took, target)),
            ('hinting: pagehintd ran the %s policy' % policy, ran,
             'pagehintd.log %s "%s"' % ('says' if ran else 'does not say', said))]


def daemon_resumes_stopped_guest():
    """A daemon that starts on a guest stopped in its reboot (its
    predecessor died there) voids the table and resumes the guest."""
    name = 'hinting: a daemon started on a guest stopped in its reboot resumes it'
    guest = vm.Guest('left-stopped', plan='reboot', timeout=300, daemon_args=[],
                     daemon_later=True)
    monitor = guest.path('monitor.sock')
    try:
        guest.start()
        def status():
            try:
                return vm.qmp_hmp(monitor, 'info status')
            except (OSError, ValueError):    # QEMU not listening yet
                return ''
        stopped = wait_for(lambda: 'shutdown' in status(), 240, step=0.5)
        if stopped:
            guest.start_daemon()
        result = guest.wait()
    finally:
        guest.cleanup()
    log = result.read('pagehintd.log')
    said = 'the guest was left stopped in a reboot: new table epoch, resuming it'
    return [(name, bool(stopped) and said in log,
             'QEMU said %s; pagehintd.log: %s' % ('shutdown' if stopped else 'never shutdown',
                                                  log.strip()[-300:]))] + \
        guestlog.evaluate(result, 'boot left-stopped', starts=2, resets=1, attached=True)


# The stress plan frees about 2.8 GiB over its rounds; a quarter of that
# given back while it runs shows the daemon kept up with it.
STRESS_MIN_DROPPED = 2880 * 256 // 4
# Once it ended, the guest (1 GiB) is mostly free: half of it dropped
STRESS_MIN_HELD_BACK = 512 * 256


def stress_scenario(guest):
    """Frames given back while the stress runs, counted from its start
    (attaching alone drops most of the guest's memory once); then, with
    the guest waiting for the word "looked", that the RAM file holds none
    of the frames the table says were dropped: a daemon that counted
    without punching would pass the count alone."""
    name = 'hinting: pagehintd gave back memory during the stress test'
    if not wait_for(lambda: 'mark: started' in guest.read('tap.log'), guest.timeout):
        return [(name, False, 'the stress never started (no mark in tap.log)')]
    start = table_counters(guest)
    try:
        if not wait_for(lambda: 'mark: stress done' in guest.read('tap.log')
                        or guest.proc.poll() is not None, guest.timeout):
            return [(name, False, 'the stress never ended')]
        end = table_counters(guest)
        dropped = end['dropped_unused'] - start['dropped_unused']
        # what the stress freed last goes back too, in its own time
        wait_for(lambda: read_table(guest)[0].count(UNUSED_DROPPED) >= STRESS_MIN_HELD_BACK,
                 MISSING_AFTER_S, step=0.2)
        holds = holds_nothing_dropped(guest, 'hinting: after the stress the host holds no frame '
                                      'the table says it dropped', STRESS_MIN_HELD_BACK)
    finally:
        guest.tell('looked')
    return [(name, dropped >= STRESS_MIN_DROPPED,
             '%d unused frames dropped while it ran (wanted >= %d), %d busy waits'
             % (dropped, STRESS_MIN_DROPPED, end['busy_waits'] - start['busy_waits'])), holds]


def status_lines(guest, offset=0):
    """pagehintd's JSON status lines, from byte OFFSET of its output on."""
    with open(guest.path('pagehintd.jsonl'), 'rb') as f:
        f.seek(offset)
        text = f.read().decode(errors='replace')
    return [json.loads(l) for l in text.splitlines() if l.startswith('{') and l.endswith('}')]


# A round of the daemon-restart plan's memfill: 96 MiB, freed at its end
MEMFILL_ROUND_FRAMES = 96 * 256


def daemon_at_work(guest):
    """Wait for the guest's workload to start and for the daemon to give
    back what it frees: the daemon is at work when the test ends it.
    Returns what is missing, or ''."""
    if not wait_for(lambda: 'mark: started' in guest.read('tap.log')
                    or guest.proc.poll() is not None, 300):
        return 'the guest test never started'
    start = table_counters(guest)['dropped_unused']
    if not wait_for(lambda: table_counters(guest)['dropped_unused'] - start >= 1024,
                    MISSING_AFTER_S, step=0.1):
        return 'the first pagehintd gave back fewer than 1024 frames while the guest ran'
    return ''


KILL_ATTEMPTS = 1000


def stopped(pid):
    """Whether process PID is stopped (state T in /proc/PID/stat)."""
    with open('/proc/%d/stat' % pid) as f:
        return f.read().rsplit(')', 1)[1].split()[0] == 'T'


def kill_between_claims(guest):
    """SIGKILL the daemon at a moment it holds no claim on a frame: it is
    stopped, the table looked at, and it is killed if no frame is busy, or
    let go on and stopped again later.  Killed holding a claim, it would
    leave the guest waiting for the next daemon, which is the business of
    daemon_died_claiming_scenario, not of this one: where a plain SIGKILL
    lands depends on the machine's speed."""
    pid = guest.daemon.pid
    for _ in range(KILL_ATTEMPTS):
        guest.daemon.send_signal(signal.SIGSTOP)
        if not wait_for(lambda: stopped(pid), MISSING_AFTER_S, step=0.001):
            return False
        if not frames_busy(guest):
            guest.stop_daemon(signal.SIGKILL)
            return True
        guest.daemon.send_signal(signal.SIGCONT)
        time.sleep(0.01)
    return False


def daemon_restart_scenario(guest):
    """A daemon restarted under a running guest gives memory back again:
    killed while it works, restarted once the guest has freed a round of
    memory with no daemon, the new process's own status lines must show
    its count rise, and the RAM file must hold none of the frames the
    table says are dropped.  The guest goes on until told "done"."""
    name = 'hinting: pagehintd killed with SIGKILL and restarted'
    try:
        missing = daemon_at_work(guest)
        if missing:
            return [(name, False, missing)]
        if not kill_between_claims(guest):
            return [(name, False, 'pagehintd held a claim every time it was stopped, '
                     '%d times' % KILL_ATTEMPTS)]
        offset = os.path.getsize(guest.path('pagehintd.jsonl'))
        freed = table_counters(guest)['to_unused']
        # a whole round freed while no daemon ran: the new one has
        # something of its own to give back
        if not wait_for(lambda: table_counters(guest)['to_unused'] - freed
                        >= MEMFILL_ROUND_FRAMES, MISSING_AFTER_S, step=0.1):
            return [(name, False, 'the guest freed less than a round of memory in %d s'
                     % MISSING_AFTER_S)]
        guest.start_daemon()

        def rise():
            lines = status_lines(guest, offset)
            counts = [l['dropped']['unused'] for l in lines]
            return counts[-1] - counts[0] if len(counts) >= 2 and counts[-1] > counts[0] else 0
        risen = wait_for(rise, MISSING_AFTER_S, step=0.5)
        holds = holds_nothing_dropped(guest, 'hinting: after the restart the host holds no frame '
                                      'the table says it dropped', MEMFILL_ROUND_FRAMES)
    finally:
        guest.tell('done')
    return [(name, bool(risen) and guest.daemon.poll() is None,
             'the new pagehintd gave back %d more frames between its own status reports; %s'
             % (risen or 0, guest.read('pagehintd.log').strip()[-200:])), holds]


TABLE_HEADER = struct.Struct('<8sIIIIQ')    # magic, version, header_size, page_size, nr_ranges,
                                            # nr_frames
TABLE_RANGE = struct.Struct('<QQQ')         # first_pfn, nr_frames, file_offset
TABLE_RANGES_AT = 56                        # offsetof(struct pagehint_header, ranges)
HOST_EPOCH_AT, GUEST_EPOCH_AT = 40, 48      # offsetof(struct pagehint_header, ...)
SUMMARY_OFFSET_AT = 216                     # offsetof(struct pagehint_header, summary_offset)
# state bytes, as include/uapi/linux/pagehint.h encodes them
UNUSED, UNUSED_DROPPED, BUSY_UNUSED, BUSY_VOLATILE = 0x01, 0x41, 0x81, 0x82


GUEST_COUNTERS = struct.Struct('<QQQQ')     # to_unused, to_stable, busy_waits, frames_unused
HOST_COUNTERS = struct.Struct('<QQQQ')      # dropped_unused, dropped_volatile, punch_calls, cas_lost
GUEST_COUNTERS_AT = TABLE_RANGES_AT + 4 * TABLE_RANGE.size


def table_counters(guest):
    """The counters in the table's header, live: what the guest last
    published and what the host has done."""
    with open(guest.path('table'), 'rb') as f:
        data = f.read(GUEST_COUNTERS_AT + GUEST_COUNTERS.size + HOST_COUNTERS.size)
    values = GUEST_COUNTERS.unpack_from(data, GUEST_COUNTERS_AT) + \
        HOST_COUNTERS.unpack_from(data, GUEST_COUNTERS_AT + GUEST_COUNTERS.size)
    return dict(zip(('to_unused', 'to_stable', 'busy_waits', 'frames_unused', 'dropped_unused',
                     'dropped_volatile', 'punch_calls', 'cas_lost'), values))


def read_table(guest):
    """The table's state bytes (not the change summary after them) and its
    ranges (include/uapi/linux/pagehint.h)."""
    with open(guest.path('table'), 'rb') as f:
        data = f.read()
    _, _, header_size, _, nr_ranges, nr_frames = TABLE_HEADER.unpack_from(data)
    ranges = [TABLE_RANGE.unpack_from(data, TABLE_RANGES_AT + i * TABLE_RANGE.size)
              for i in range(nr_ranges)]
    return bytearray(data[header_size:header_size + nr_frames]), header_size, ranges


def claim_every_unused_frame(guest):
    """Do what a pagehintd that died in the middle of a drop leaves behind:
    every unused frame claimed (BUSY) and never released.  The guest is
    stopped meanwhile, so no compare-and-swap of its races these stores."""
    sock = guest.path('monitor.sock')
    vm.qmp_hmp(sock, 'stop')
    try:
        states, header_size, _ = read_table(guest)
        claimed = 0
        for i, s in enumerate(states):
            if s in (UNUSED, UNUSED_DROPPED):
                states[i] = BUSY_UNUSED
                claimed += 1
        with open(guest.path('table'), 'r+b') as f:
            f.seek(header_size)
            f.write(states)
    finally:
        vm.qmp_hmp(sock, 'cont')
    return claimed


def punch_claimed_frames(guest):
    """Drop the memory of every frame still claimed, as the dead daemon
    would have: a guest that had used one of them loses what it wrote."""
    states, _, ranges = read_table(guest)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    punched = 0
    with open(guest.path('ram'), 'r+b') as f:
        for first, count, offset in ranges:
            pfn = first
            while pfn < first + count:
                if states[pfn] != BUSY_UNUSED:
                    pfn += 1
                    continue
                end = pfn
                while end < first + count and states[end] == BUSY_UNUSED:
                    end += 1
                # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
                if libc.fallocate(f.fileno(), 3, offset + (pfn - first) * 4096,
                                  (end - pfn) * 4096):
                    raise OSError(ctypes.get_errno(), 'fallocate(PUNCH_HOLE) on the RAM file')
                punched += end - pfn
                pfn = end
    return punched


def allocated_extents(path):
    """The byte ranges of PATH that hold data, by SEEK_DATA/SEEK_HOLE
    (tmpfs answers them exactly): what the host really holds."""
    extents = []
    fd = os.open(path, os.O_RDONLY)
    try:
        size, pos = os.fstat(fd).st_size, 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:     # ENXIO: only a hole is left
                break
            pos = os.lseek(fd, start, os.SEEK_HOLE)
            extents.append((start, pos))
    finally:
        os.close(fd)
    return extents


def dropped_state(s):
    """UNUSED, VOLATILE or (s390) potentially volatile, with DISCARDED and
    not BUSY: the host says it gave the frame's memory back."""
    return s & 0xc0 == 0x40 and s & 0x0f in (1, 2, 3)


def host_holds_what_it_dropped(guest, monitor='monitor.sock'):
    """With the guest stopped, so that it takes no frame back meanwhile:
    the frames the table says the host dropped, and those of them the RAM
    file still holds (a daemon that counts but never punches).  The table
    is read first: a frame dropped then stays dropped until the guest runs
    again, and the daemon only ever frees memory.  Returns (dropped, of
    them volatile, held, resident MiB)."""
    sock = guest.path(monitor)
    vm.qmp_hmp(sock, 'stop')
    try:
        states, _, ranges = read_table(guest)
        extents = allocated_extents(guest.path('ram'))
        resident = guest.resident_mib()
    finally:
        vm.qmp_hmp(sock, 'cont')
    starts = [start for start, _ in extents]
    dropped = volatile = held = 0
    for first, count, offset in ranges:
        for pfn in range(first, first + count):
            if not dropped_state(states[pfn]):
                continue
            dropped += 1
            volatile += states[pfn] & 0x0f != 1
            at = offset + (pfn - first) * 4096
            # the extent that begins at or before the frame, if any
            i = bisect.bisect_right(starts, at) - 1
            if i >= 0 and at < extents[i][1]:
                held += 1
    return dropped, volatile, held, resident


def holds_nothing_dropped(guest, name, minimum, monitor='monitor.sock'):
    """A result: at least MINIMUM frames are dropped now, by the table, and
    the RAM file holds none of them."""
    try:
        dropped, volatile, held, resident = host_holds_what_it_dropped(guest, monitor)
    except (OSError, ValueError) as e:
        return (name, False, 'could not look: %s' % e)
    return (name, dropped >= minimum and held == 0,
            '%d frames dropped by the table (wanted >= %d; %d of them volatile), %d of them '
            'still held by the RAM file; it holds %.0f MiB'
            % (dropped, minimum, volatile, held, resident))


def frames_busy(guest):
    states = read_table(guest)[0]
    return states.count(BUSY_UNUSED) + states.count(BUSY_VOLATILE)


def daemon_died_claiming_scenario(guest):
    """A daemon killed between claim and release: the guest waits, says so
    on its console after 10 s, and goes on untouched once the next daemon
    releases the frames (docs/protocol.md, "A daemon that dies")."""
    name = 'hinting: the guest waits for frames a dead pagehintd left busy'
    try:
        return died_claiming(guest, name)
    finally:
        guest.tell('done')


def died_claiming(guest, name):
    missing = daemon_at_work(guest)
    if missing:
        return [(name, False, missing)]
    guest.stop_daemon(signal.SIGKILL)
    try:
        # only what the console says from the claim on counts
        console_at = len(guest.read('console.log'))
        busy_waits = table_counters(guest)['busy_waits']
        claimed = claim_every_unused_frame(guest)
        said = wait_for(lambda: guestlog.BUSY_TOO_LONG in guest.read('console.log')[console_at:],
                        120, step=0.1)
        punched = punch_claimed_frames(guest)
    except (OSError, ValueError) as e:
        return [(name, False, 'could not play the dead daemon: %s' % e)]
    waited = time.monotonic()
    guest.start_daemon()
    # the new daemon releases them first thing; the guest runs on, and
    # publishes its count of waits once a second
    released = wait_for(lambda: frames_busy(guest) == 0, MISSING_AFTER_S, step=0.1)
    waits = wait_for(lambda: table_counters(guest)['busy_waits'] - busy_waits, MISSING_AFTER_S,
                     step=0.1)
    return [(name, bool(said) and bool(released) and punched > 0 and bool(waits),
             '%d unused frames claimed and left busy; the guest %s and waited %d times; '
             '%d of them punched; the next daemon %s'
             % (claimed, 'said so on its console' if said else 'did not say so within 120 s',
                waits or 0, punched, 'released them in %.1f s' % (time.monotonic() - waited)
                if released else 'did not release them within %d s' % MISSING_AFTER_S))]


def volatile_scenario(guest):
    """What the host dropped while the plan read the data disk, counted
    from the mount on (the guest's own steps count what they found)."""
    name = 'hinting: pagehintd dropped volatile page cache'
    if not wait_for(lambda: 'test: ok mount-data' in guest.read('tap.log')
                    or guest.proc.poll() is not None, guest.timeout):
        return [(name, False, 'the data disk was never mounted')]
    start = table_counters(guest)['dropped_volatile']
    if not wait_for(lambda: 'plan: done' in guest.read('tap.log')
                    or guest.proc.poll() is not None, guest.timeout):
        return [(name, False, 'the plan never ended')]
    dropped = table_counters(guest)['dropped_volatile'] - start
    return [(name, dropped >= 16384, 'dropped %d volatile frames from the mount on (wanted '
             '>= 16384, the data disk\'s files once)' % dropped)] + \
        selfcheck_results(guest.read('tap.log'))


# The verdict line guest/selfcheck prints for each program's check, when
# the program itself said its data is intact.
SELFCHECK_VERDICTS = {
    'git': r'selfcheck: git fsck --full: clean, \d+ objects in packs, (\d+) commits',
    'sqlite': r'selfcheck: sqlite3 integrity_check: ok, (\d+) rows',
    'xz': r'selfcheck: xz -t: (\d+) files intact',
}


def selfcheck_results(tap):
    """Each selfcheck step of the volatile plan: in every round, the
    program's own verdict on its data, from the check that ran last, once
    the guest had found the host's drops (vmdelta's line that ends the
    round), and what the writes added, seen again after drop_caches."""
    results = []
    for prog, verdict in SELFCHECK_VERDICTS.items():
        step = 'selfcheck-' + prog
        name = 'volatile: %s checked its own data after the host dropped it' % prog
        lines = re.findall(r'^log: %s: (.*)$' % re.escape(step), tap, re.M)
        rounds, last = [], None
        for line in lines:
            m = re.fullmatch(verdict, line)
            if m:
                last = int(m.group(1))
                continue
            m = re.fullmatch(r'vmdelta: page_states_discarded rose by (\d+) \(wanted >= (\d+)\)',
                             line)
            if m:
                rounds.append((last, int(m.group(1)), int(m.group(2))))
                last = None
        done = re.compile(r'selfcheck: %s: (\d+) checks passed, each after the host dropped '
                          r'its data, (\d+) writes' % prog)
        ended = [m for m in map(done.fullmatch, lines) if m]
        problems = []
        if not ended:
            # the program's own complaint, which guest/selfcheck prints first
            said = [l for l in lines if l.startswith('selfcheck: %s: ' % prog)] or \
                [l for l in lines if l.startswith('selfcheck: ')]
            problems.append('it never finished: %s' % (said[-1] if said else 'no step output'))
        elif int(ended[0].group(1)) != len(rounds) or len(rounds) != int(ended[0].group(2)) + 1:
            problems.append('%d rounds for %s' % (len(rounds), ended[0].group(0)))
        for i, (value, rose, wanted) in enumerate(rounds):
            if value is None:
                problems.append('round %d: no verdict from its last check' % (i + 1))
            elif rose < wanted:
                problems.append('round %d: %d dropped frames read again (wanted >= %d)'
                                % (i + 1, rose, wanted))
        values = [r[0] for r in rounds]
        if None not in values and any(b <= a for a, b in zip(values, values[1:])):
            problems.append('the writes did not show: %s' % values)
        results.append((name, bool(rounds) and not problems,
                        '; '.join(problems) if problems else
                        '%d rounds; %s; dropped frames read again: %s'
                        % (len(rounds), ' -> '.join(map(str, values)),
                           ', '.join(str(r[1]) for r in rounds))))
    return results


# What pagehintd says when the guest's epoch goes (host/pagehintd.c)
DAEMON_SAW_DETACH = 'pagehintd: the guest detached: nothing is given back'
DAEMON_SAW_ATTACH = 'pagehintd: the guest attached'
# What the guest's driver says when it detaches at shutdown
GUEST_DETACHED = 'page hinting detached: the host gives nothing back from now on'


def daemon_saw_detach_and_attach(guest):
    """Whether pagehintd saw the guest attach, detach and attach again, in
    that order; and its lines about it."""
    log = guest.read('pagehintd.log')
    first = log.find(DAEMON_SAW_ATTACH)
    detached = log.find(DAEMON_SAW_DETACH, first + 1) if first >= 0 else -1
    again = log.find(DAEMON_SAW_ATTACH, detached + 1) if detached >= 0 else -1
    lines = ' / '.join(l for l in log.splitlines() if 'the guest' in l)[-400:]
    return 0 <= first < detached < again, lines


# What the guest's driver says when it detaches for hibernation
# (drivers/virt/pagehint/ivshmem.c)
GUEST_OFF_FOR_HIBERNATION = 'page hinting off for hibernation'


def hibernate_scenario(guest):
    """The order in which the guest's kernels attached and detached: the
    first boot attaches, detaches for the image and attaches again to
    write it; after the reset, the kernel that restores the image attaches,
    detaches before it copies the image in, and the resumed kernel
    attaches afresh."""
    name = 'hibernate: detached for the image and its restore, attached after each'
    if not wait_for(lambda: 'plan: done' in guest.read('tap.log')
                    or guest.proc.poll() is not None, guest.timeout):
        return [(name, False, 'the plan never ended')]
    said = {guestlog.ATTACHED: 'on', GUEST_OFF_FOR_HIBERNATION: 'off'}
    seen = [word for line in guest.read('console.log').splitlines()
            for text, word in said.items() if text in line]
    want = ['on', 'off', 'on', 'on', 'off', 'on']
    return [(name, seen == want, 'attached (on) and detached (off): %s, wanted %s'
             % (' '.join(seen) or 'neither', ' '.join(want)))]


def kexec_scenario(guest):
    """The old kernel detaches before it jumps (its console says so), the
    daemon sees it detach and the new kernel attach, in that order; the
    plan checks that the new kernel lost nothing."""
    name = 'hinting: the kexec\'d kernel attached only after the old one detached'
    if not wait_for(lambda: 'plan: done' in guest.read('tap.log')
                    or guest.proc.poll() is not None, guest.timeout):
        return [(name, False, 'the plan never ended')]
    seen, lines = daemon_saw_detach_and_attach(guest)
    said = GUEST_DETACHED in guest.read('console.log')
    return [(name, said and seen, 'guest console %s "%s"; pagehintd.log: %s'
             % ('said' if said else 'never said', GUEST_DETACHED, lines))]


def kexec_late_daemon():
    """A host that drops late: pagehintd starts only once the new kernel
    runs, and would find every frame the old kernel left unused, some of
    them the new kernel's by now.  The detach keeps it off them until the
    new kernel attaches (the plan checks memory and files).  The new
    kernel boots with the table's device held by pci-stub and says so;
    the daemon starts then, and the guest binds its driver only once the
    host says "attach": the daemon's first look is at the old kernel's
    table, whatever the machine's speed."""
    name = 'hinting: a pagehintd started after the kexec waited for the new kernel'
    guest = vm.Guest('kexec-late-daemon', plan='kexec', timeout=480, daemon_args=['--chaos'],
                     daemon_later=True, cmdline='kexec_hold_table=1')
    held = first_status = None
    try:
        guest.start()
        held = wait_for(lambda: 'mark: the new kernel holds its table' in guest.read('tap.log')
                        or guest.proc.poll() is not None, 300, step=0.05)
        # without the mark, the daemon starts all the same: the guest's
        # power-off waits for one (the check fails on the missing mark)
        if guest.proc.poll() is None:
            guest.start_daemon()
            first_status = wait_for(lambda: status_lines(guest)[:1]
                                    or guest.daemon.poll() is not None, MISSING_AFTER_S, step=0.05)
        guest.tell('attach')
        result = guest.wait()
    finally:
        guest.cleanup()
    log = result.read('pagehintd.log')
    saw = [l for l in log.splitlines() if 'the guest' in l]
    # its first status: the old kernel's unused frames were there, but the
    # table said detached
    first = [json.loads(l) for l in result.read('pagehintd.jsonl').splitlines()
             if l.startswith('{')][:1]
    detached_at_start = bool(first) and first[0]['attached'] is False
    return [(name, bool(held) and bool(first_status) and detached_at_start and
             saw[:1] == [DAEMON_SAW_ATTACH] and GUEST_DETACHED in result.console,
             'the new kernel %s; first status: %s; pagehintd.log: %s'
             % ('held its table' if held else 'never said it held its table',
                'attached %s, %d frames unused' % (first[0]['attached'],
                                                   first[0]['frames']['unused'])
                if first else 'none', ' / '.join(saw)[-300:]))] + \
        guestlog.evaluate(result, 'boot kexec-late-daemon', starts=2, attached=True)


# How long pagehintd stays stopped while it holds a claim (issue 13).
BUSY_HOLD_S = 20
DAEMON_STOPPED = 'pagehintd: stopping with frames '
BUSY_HOLD_INTACT = 'held busy, dropped and read again: the page is intact'


def process_stopped(pid):
    """Whether the process is in the stopped state (SIGSTOP)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] == 'T'
    except (OSError, IndexError):
        return False


# The guest's wait for a frame the host holds busy (drivers/virt/pagehint/
# table.c), and the functions of the take-back path it may be inlined
# into; how many samples in a row must find a vCPU there: one could be a
# wait that ends at once.
BUSY_WAIT_FUNCTIONS = ('pagehint_wait_while_busy', 'pagehint_frame_make_stable_if_present',
                       'pagehint_set_stable_if_present')
SPIN_SAMPLES = 3


def busy_waiter_seen(guest, samples, why):
    """Whether some vCPU is in the busy wait SAMPLES times in a row; WHY
    (a list) gets the last error."""
    try:
        return all(any(p.split('+')[0] in BUSY_WAIT_FUNCTIONS
                       for p in guest.vcpu_places(need_symbols=True))
                   for _ in range(samples))
    except (OSError, ValueError) as e:
        why[:] = [str(e)]
        return False


def continue_if_stopped(daemon):
    """SIGCONT for a daemon that stopped after the test let it go: it
    must never be left stopped."""
    if daemon.poll() is None and process_stopped(daemon.pid):
        daemon.send_signal(signal.SIGCONT)


def busy_hold():
    """pagehintd stopped (SIGSTOP) for BUSY_HOLD_S s while it holds the
    claim on the frame of a page the guest reads: the guest CPU spins, says
    so, and reads the page intact once the host lets it go.  The daemon
    stops itself right after the claim (--stop-after-claiming) and gets
    SIGCONT BUSY_HOLD_S s after a vCPU is seen in the wait: the order of
    events decides, never the machine's speed."""
    name = 'hinting: pagehintd stopped %d s holding a claim; the guest waited and read ' \
           'its page intact' % BUSY_HOLD_S
    # The reading CPU spins with interrupts off all that time; the guest's
    # RCU stall detector (21 s) would race the SIGCONT.
    # Each wait below is bounded (300 s) and the guest's timeout covers them.
    guest = vm.Guest('busy-hold', plan='busy-hold', timeout=1200, daemon_args=['--chaos'],
                     daemon_later=True, cmdline='rcupdate.rcu_cpu_stall_timeout=300',
                     test_hooks=True)
    mark = re.compile(r'mark: busy-hold pfn (\d+)\n')   # the whole line, not its first digits
    stopped = False
    frame, held, why = None, 0.0, []
    try:
        guest.start()
        wait_for(lambda: mark.search(guest.read('tap.log')) or guest.proc.poll() is not None,
                 300)
        m = mark.search(guest.read('tap.log'))
        if m and guest.proc.poll() is None:
            frame = m.group(1)
            guest.daemon_args += ['--stop-after-claiming', frame]
            daemon = guest.start_daemon()
            stopped = wait_for(lambda: process_stopped(daemon.pid) or daemon.poll() is not None,
                               300, step=0.05) and daemon.poll() is None
            # The waiting CPU has interrupts off (the folio's state lock):
            # its report reaches the console only once the wait ends.  So
            # the hold counts from when a vCPU is seen in the wait.
            spinning = stopped and wait_for(lambda: busy_waiter_seen(guest, SPIN_SAMPLES, why)
                                            or guest.proc.poll() is not None, 300, step=0.1)
            if spinning and guest.proc.poll() is None:
                since = time.monotonic()
                time.sleep(BUSY_HOLD_S)
                held = time.monotonic() - since
        if guest.daemon:
            continue_if_stopped(guest.daemon)
            daemon = guest.daemon
            result = guest.wait(tick=lambda: continue_if_stopped(daemon))
        else:
            result = guest.wait()
    finally:
        if guest.daemon and guest.daemon.poll() is None:
            guest.daemon.send_signal(signal.SIGCONT)
        guest.cleanup()
    log = result.read('pagehintd.log')
    intact = BUSY_HOLD_INTACT in result.tap
    # only after the wait: what the console says once the page came back
    said = guestlog.BUSY_TOO_LONG in result.console
    run = re.search(DAEMON_STOPPED + r'(\d+-\d+)', log)
    detail = ('frame %s; pagehintd %s; %s; the guest %s; %s'
              % (frame or '(never named)',
                 'stopped holding frames %s' % run.group(1) if run else 'never stopped',
                 'a vCPU waited, held %.0f s more' % held if held
                 else 'no vCPU was seen waiting' + (' (%s)' % why[0] if why else ''),
                 'said it waited' if said else 'never said it waited',
                 'its page read back intact' if intact else 'no "%s"' % BUSY_HOLD_INTACT))
    return [(name, stopped and bool(held) and said and intact and bool(run) and
             'pagehintd: continued; releasing' in log, detail)] + \
        guestlog.evaluate(result, 'boot busy-hold', expected_console=[guestlog.BUSY_TOO_LONG],
                          attached=True)


GUEST_REMOVED = 'page hinting off: the device is going away'


def unplug_scenario(guest):
    """Unplug the table's device when the guest asks, and plug it back;
    pagehintd must see the guest detach and attach again."""
    name = 'hinting: the table\'s device unplugged under load and plugged back'
    monitor = guest.path('monitor.sock')
    if not wait_for(lambda: 'mark: unplug' in guest.read('tap.log')
                    or guest.proc.poll() is not None, guest.timeout):
        return [(name, False, 'the guest never asked for the unplug')]
    vm.qmp_hmp(monitor, 'device_del pagehint')
    if not wait_for(lambda: 'mark: plug' in guest.read('tap.log')
                    or guest.proc.poll() is not None, guest.timeout):
        return [(name, False, 'the guest never asked to plug it back')]
    # QEMU refuses the id until the guest has let the old device go
    if not wait_for(lambda: 'pagehint (child' not in
                    vm.qmp_hmp(monitor, 'qom-list /machine/peripheral'),
                    MISSING_AFTER_S, step=0.5):
        return [(name, False, 'the device was still there %d s after its unplug'
                 % MISSING_AFTER_S)]
    # The same table file behind a new memory backend: QEMU 7.2 asserts
    # (qemu_ram_set_idstr) when an unplugged ivshmem's backend is reused.
    vm.qmp_hmp(monitor, 'object_add memory-backend-file,id=pagestates-again,size=%d,'
               'mem-path=%s,share=on' % (os.path.getsize(guest.path('table')),
                                        guest.path('table')))
    vm.qmp_hmp(monitor, 'device_add ' + vm.table_device('pagestates-again'))
    if not wait_for(lambda: 'plan: done' in guest.read('tap.log')
                    or guest.proc.poll() is not None, guest.timeout):
        return [(name, False, 'the plan never ended')]
    seen, lines = daemon_saw_detach_and_attach(guest)
    return [(name, seen, 'pagehintd.log: ' + lines)]


def corrupt_magic(guest):
    """Damage the table the way a stale or foreign file would look."""
    with open(guest.path('table'), 'r+b') as f:
        f.write(b'NOTHINTS')


def host_starts_wanting(target_file):
    """The give-back plan's last step rests the guest's scanner for an
    hour, then says so; the host sets its target to 0 (a new target file
    and SIGHUP), and the guest checks that the scanner walked."""
    def scenario(guest):
        results = give_back_scenario(guest)
        name = 'hinting: pagehintd took target 0 from its target file on SIGHUP'
        if not wait_for(lambda: 'mark: resting' in guest.read('tap.log'), 600):
            return results + [(name, False, 'the guest never said it rests (no mark in tap.log)')]
        with open(target_file, 'w') as f:
            f.write('0\n')
        guest.daemon.send_signal(signal.SIGHUP)
        said = 'pagehintd: target 0 MiB: volatile frames go while above it\n'
        took = wait_for(lambda: said in guest.read('pagehintd.log'), MISSING_AFTER_S)
        return results + [(name, bool(took), 'pagehintd.log %s "%s"'
                           % ('says' if took else 'does not say', said.strip()))]
    return scenario


def give_back_boot(name, daemon_args=()):
    """The give-back plan, with no target until its last step asks for one."""
    with tempfile.NamedTemporaryFile('w', dir='/dev/shm', prefix='pagehint-target-') as f:
        f.write('none\n')
        f.flush()
        return hinted_boot('give-back', host_starts_wanting(f.name), name=name, timeout=600,
                           daemon_args=list(daemon_args) + ['--target-file', f.name])


def stage_hinting():
    """Integration: guest, table and pagehintd together."""
    results = []
    # The default policy (aged, 2 s) and immediate give back the same memory.
    results += give_back_boot('give-back')
    results += give_back_boot('give-back-immediate', daemon_args=['--policy', 'immediate'])
    # These measure how the daemon keeps up with a guest that frees and
    # takes memory again within seconds, which the aged policy would rightly
    # leave alone: immediate.
    results += hinted_boot('stress', stress_scenario, daemon_args=['--policy', 'immediate'])
    results += hinted_boot('reboot', None, starts=2, resets=1)
    results += hinted_boot('hibernate', hibernate_scenario, daemon_args=['--chaos'],
                           cmdline='resume=/dev/vdb page_states.volatile_scan_ms=100',
                           resets=1, timeout=900, attached=False)
    results += hinted_boot('kexec', kexec_scenario, daemon_args=['--chaos'], starts=2,
                           timeout=480)
    results += kexec_late_daemon()
    results += busy_hold()
    results += daemon_resumes_stopped_guest()
    results += hinted_boot('daemon-restart', daemon_restart_scenario,
                           daemon_args=['--policy', 'immediate'])
    results += hinted_boot('daemon-restart', daemon_died_claiming_scenario,
                           name='daemon-died-claiming',
                           expected_console=[guestlog.BUSY_TOO_LONG])
    results += hinted_boot('unplug', unplug_scenario, daemon_args=['--chaos'],
                           cmdline='page_states.volatile_scan_ms=100', timeout=900,
                           attached=False)
    results += hinted_boot('bad-table', None, prepare=corrupt_magic, daemon=False, attached=False)
    # A safety net only: each step waits for events, bounded at 300 s.
    # One run with mapped-stable, the new compaction and partial-writes
    # steps took 1053 s on two cores shared with three other guests; the
    # selfcheck steps (git, sqlite3, xz) add about a sixth.
    results += hinted_boot('volatile', volatile_scenario, daemon_args=['--chaos'],
                           cmdline='page_states.volatile_scan_ms=100', timeout=1800,
                           share_data=True)
    return results


# The kernel's own tools/testing/selftests/mm programs, built from the
# guest kernel's tree (guest/plans/selftests-mm says which, and which not
# and why), booted twice:
#   off  page_states=off and no pagehintd: the guest kernel as if the
#        series were not there
#   on   pagehintd --chaos (every unused and volatile frame dropped the
#        moment it appears) and a volatile page cache scan every 100 ms
# Every test passing off must pass on, and every sub-test that passes off
# must pass on.  A sub-test that skips is reported with its reason, never
# counted as passed silently, and fails the stage unless
# SELFTESTS_MM_ACCEPTED_SKIPS accepts its reason; a program that skips as
# a whole fails (the plan holds only programs that run here).
SELFTESTS_MM_PLAN = 'selftests-mm'
SELFTESTS_MM_MODES = (
    ('off', dict(daemon=False, cmdline='page_states=off', attached=False)),
    ('on', dict(daemon_args=['--chaos'], cmdline='page_states.volatile_scan_ms=100')),
)
# Frames of page cache that the programs of the "on" boot, together, must
# have found dropped by pagehintd and read again (their text and their
# files on the scratch disk): counted by each program's run, so that the
# scratch setup's own drop_caches does not count.
SELFTESTS_MM_MIN_DROPPED = 1000
# No program has a time limit (how long it takes is the machine's
# business).  A hang is a program that stops using CPU: the guest prints
# "selftest-progress:" on its console every 10 s that the running
# program's processes used CPU time (guest/selftests-mm/run), and a boot
# whose guest has printed neither that nor a result for this long is
# ended and fails, with where its vCPUs were.  The boot's own timeout is
# only a safety net against a program that spins.
SELFTESTS_MM_STALL_S = 600
SELFTESTS_MM_TIMEOUT_S = 4 * 3600
# The sub-test skips that the stage accepts, each with why this guest
# cannot run that case: (test, as the plan names it; a regular expression
# matched against "sub-test # skip reason"; why).  Any other
# skip fails the stage, with hinting off as with it on: a skip whose
# cause can be fixed (a config option, hugetlb pages, swap) is a test
# that does not run.
SELFTESTS_MM_ACCEPTED_SKIPS = (
    ('cow', r'^Basic COW after fork\(\) when collapsing after fork\(\) \(fully shared\) # '
     r'MADV_COLLAPSE failed: Invalid argument',
     "6.12's collapse takes no anonymous range without a writable PTE (SCAN_PAGE_RO, "
     'EINVAL), and after fork() every PTE of the fully shared THP is read-only'),
    ('mdwe_test', r'\.arm64_BTI # HWCAP2_BTI not supported', 'arm64 only'),
)


def selftests_mm_plan():
    """The plan's test names, in order (its first line prepares the disk)."""
    return guestlog.plan_tests(SELFTESTS_MM_PLAN)[1:]


def selftest_cases(lines):
    """What one selftests/mm program printed, as {sub-test: (status, reason)}
    with status 'ok', 'fail' or 'skip', plus its run time ('' if unknown)
    and the frames it found dropped and read again (None if unknown).
    Sub-tests are KTAP lines ("ok 3 name # SKIP why") or uffd-unit-tests'
    own ("Testing minor on shmem... done")."""
    cases, seconds, dropped = {}, '', None
    run = ''
    for line in lines:
        # cow and gup_longterm name a case only in the "# [RUN] ..." line
        # before its result
        m = re.match(r'# \[RUN\] (.*)$', line)
        if m:
            run = m.group(1).strip()
        m = re.match(r'(not ok|ok) (\d+) ?(.*)$', line)
        if m:
            desc, directive = (m.group(3).split('#', 1) + [''])[:2]
            desc = desc.strip() or run
            run = ''
            # The number is the sub-test; the description can change
            # from run to run (mrelease_test names a size it adapts).
            key = '%3s %s' % (m.group(2), desc.strip())
            if re.match(r'\s*SKIP', directive, re.I):
                cases[key] = ('skip', re.sub(r'^\s*SKIP\s*', '', directive, flags=re.I).strip())
            elif m.group(1) == 'ok' or re.match(r'\s*XFAIL', directive, re.I):
                cases[key] = ('ok', '')
            else:
                cases[key] = ('fail', directive.strip())
            continue
        m = re.search(r'Testing (.+?)\.\.\. (done|skipped|failed)(.*)$', line)
        if m:
            status = {'done': 'ok', 'skipped': 'skip', 'failed': 'fail'}[m.group(2)]
            reason = re.sub(r'^\s*\[reason: (.*)\]\s*$', r'\1', m.group(3)).strip()
            cases[m.group(1)] = (status, reason)
            continue
        m = re.match(r'selftest: exit status \d+ after ([\d.]+) s', line)
        if m:
            seconds = m.group(1)
        m = re.match(r'selftest: page states: \d+ frames made volatile, (\d+) found dropped', line)
        if m:
            dropped = int(m.group(1))
    return cases, seconds, dropped


def selftests_mm_watch(mode):
    """The scenario of a selftests-mm boot: watch the guest make progress
    (a program's CPU time growing, or a result) and end it once it has
    made none for SELFTESTS_MM_STALL_S, saying which program stalled."""
    name = 'selftests-mm %s: boot: every program kept making progress' % mode

    def progress(guest):
        console = guest.read('console.log')
        return (len(guest.read('tap.log')), console.count('selftest-progress:')), console

    def scenario(guest):
        seen, _ = progress(guest)
        seen_at = time.monotonic()
        # Until QEMU exits, or the boot's timeout, which guest.wait() then
        # enforces.
        while guest.proc.poll() is None and time.monotonic() - guest.started < guest.timeout:
            time.sleep(2)
            now, console = progress(guest)
            if now != seen:
                seen, seen_at = now, time.monotonic()
                continue
            if time.monotonic() - seen_at < SELFTESTS_MM_STALL_S:
                continue
            running = re.findall(r'^pagehint-guest: --- (\S+)', console, re.M)
            guest.hang_report()
            os.killpg(guest.proc.pid, signal.SIGKILL)
            guest.proc.wait()
            return [(name, False, '%s used no CPU and the guest reported nothing for %d s: '
                     'the guest was ended (its vCPUs: hang.txt)'
                     % (running[-1] if running else 'the plan', SELFTESTS_MM_STALL_S))]
        return [(name, True, '')]
    return scenario


def selftests_mm_boot(mode, kw):
    """One boot of the plan: {test: (passed, why, cases)} and the boot's
    own results (finished in time, no oops, KUnit)."""
    def scratch_disk(guest):
        # The guest's second disk becomes an ext4 scratch filesystem for
        # the tests' files and a swap file (busybox makes only ext2, where
        # fallocate(), which cow's tmpfile tests use, is not supported).
        subprocess.run(['mkfs.ext4', '-q', '-F', '-L', 'scratch', guest.path('swap.img')],
                       check=True)

    boot_name = '%s-%s' % (SELFTESTS_MM_PLAN, mode)
    results = hinted_boot(SELFTESTS_MM_PLAN, selftests_mm_watch(mode),
                          timeout=SELFTESTS_MM_TIMEOUT_S, prepare=scratch_disk,
                          name=boot_name, **kw)
    with open(os.path.join(TOP, 'build', 'logs', boot_name, 'tap.log'), errors='replace') as f:
        tap = f.read()
    # A kernel panic reboots the guest (panic=-1), which runs the plan
    # again on a disk that is no longer fresh: only the first run counts,
    # and the restart is a failure of its own.
    boot_results = []
    runs = [m.start() for m in re.finditer(r'^test: (?:ok|not ok) scratch\b', tap, re.M)]
    if len(runs) > 1:
        ran = len(re.findall(r'^test: ', tap[:runs[1]], re.M))
        tap = tap[:runs[1]]
        boot_results.append(('selftests-mm %s: boot: ran the plan once' % mode, False,
                             'the guest restarted after %d of its tests (a kernel panic?); '
                             'the results of the restarted run are ignored' % ran))
    output = {}
    for line in tap.splitlines():
        m = re.match(r'log: (\S+): (.*)', line.rstrip('\r'))
        if m:
            output.setdefault(m.group(1), []).append(m.group(2))
    tests = {}
    plan = selftests_mm_plan()
    for name, passed, why in guestlog.guest_tests(tap):
        test = name[len('guest: '):]
        if test in plan:
            tests[test] = (passed, why) + selftest_cases(output.get(test, []))
        else:
            boot_results.append(('selftests-mm %s: %s' % (mode, test), passed, why))
    for name, passed, why in results:
        if not name.startswith('guest: '):
            boot_results.append((name.replace('boot ' + boot_name,
                                              'selftests-mm %s: boot' % mode, 1), passed, why))
    return tests, boot_results


def subtest_id(key):
    """A KTAP sub-test is its number; uffd-unit-tests' is its name."""
    m = re.match(r'\s*(\d+) ', key)
    return m.group(1) if m else key


def skip_summary(cases):
    skips = [reason or 'no reason given' for status, reason in cases.values() if status == 'skip']
    reasons = sorted(set(skips), key=skips.index)
    return '%d skipped (%s)' % (len(skips), '; '.join(reasons[:3]) +
                                (' ...' if len(reasons) > 3 else '')) if skips else ''


def selftests_mm_accepted_skip(test, key, reason):
    """Why SELFTESTS_MM_ACCEPTED_SKIPS accepts that TEST's sub-test KEY
    skipped for REASON, or None."""
    text = '%s # %s' % (re.sub(r'^\s*\d+ ', '', key).strip(), reason)
    for name, pattern, why in SELFTESTS_MM_ACCEPTED_SKIPS:
        if name == test and re.search(pattern, text):
            return why
    return None


def selftests_mm_skips(tests):
    """The skipped sub-tests of one boot that SELFTESTS_MM_ACCEPTED_SKIPS
    does not accept ("test: sub-test # reason"), and how many it does."""
    refused, accepted = [], 0
    for test, (_, _, cases, _, _) in tests.items():
        for key, (status, reason) in cases.items():
            if status != 'skip':
                continue
            if selftests_mm_accepted_skip(test, key, reason):
                accepted += 1
            else:
                refused.append('%s: %s # %s' % (test, key.strip(), reason or 'no reason given'))
    return refused, accepted


def stage_selftests_mm():
    plan = selftests_mm_plan()
    runs, results = {}, []
    for mode, kw in SELFTESTS_MM_MODES:
        tests, boot_results = selftests_mm_boot(mode, kw)
        runs[mode] = tests
        refused, accepted = selftests_mm_skips(tests)
        results.append(('selftests-mm %s: every skipped sub-test has an accepted reason' % mode,
                        not refused,
                        '%d skipped for a reason not in SELFTESTS_MM_ACCEPTED_SKIPS: %s%s'
                        % (len(refused), ' | '.join(refused[:8]),
                           ' ...' if len(refused) > 8 else '') if refused else
                        '%d skips, all accepted' % accepted))
        for test in plan:
            if test not in tests:
                results.append(('selftests-mm %s: %s' % (mode, test), False,
                                'did not run (the boot ended before it)'))
                continue
            passed, why, cases, seconds, dropped = tests[test]
            failing = [k for k, (st, _) in cases.items() if st == 'fail']
            counts = ', '.join(x for x in (
                '%d ok' % sum(1 for st, _ in cases.values() if st == 'ok')
                if cases else 'exit status 0 (it reports no sub-tests)',
                skip_summary(cases), '%s s' % seconds if seconds else '',
                '%d frames found dropped' % dropped if dropped and mode == 'on' else '') if x)
            if passed and failing:
                passed, why = False, 'exit status 0, but sub-tests failed'
            if not passed and failing:
                why += '; failing: ' + ' | '.join(k.strip() for k in failing[:3])
            results.append(('selftests-mm %s: %s' % (mode, test), passed,
                            counts if passed else why))
        results += boot_results
        if mode == 'on':
            dropped = {t: v[4] for t, v in tests.items() if v[4]}
            total = sum(dropped.values())
            results.append(('selftests-mm on: the programs found volatile page cache dropped',
                            total >= SELFTESTS_MM_MIN_DROPPED,
                            '%d frames found dropped and read again while they ran (wanted >= %d)'
                            ', by %d of %d programs' % (total, SELFTESTS_MM_MIN_DROPPED,
                                                        len(dropped), len(plan))))

    off, on = runs.get('off', {}), runs.get('on', {})
    skipped = []
    for test in plan:
        name = 'selftests-mm: %s passes with hinting on as with it off' % test
        if test not in off or test not in on:
            results.append((name, False, 'did not run with hinting %s'
                            % ' and '.join(m for m, r in (('off', off), ('on', on))
                                           if test not in r)))
            continue
        off_ok = {subtest_id(k) for k, (st, _) in off[test][2].items() if st == 'ok'}
        on_ok = {subtest_id(k) for k, (st, _) in on[test][2].items() if st == 'ok'}
        named = {subtest_id(k): k.strip() for k in off[test][2]}
        lost = [named[k] for k in sorted(off_ok - on_ok)]
        problems = []
        if off[test][0] and not on[test][0]:
            problems.append('passes off, fails on: ' + on[test][1])
        if lost:
            problems.append('%d sub-tests pass off but not on: %s'
                            % (len(lost), ' | '.join(lost[:3])))
        results.append((name, not problems, '; '.join(problems) if problems else
                        '' if off[test][0] else 'fails with hinting off as well'))
        off_skip = {subtest_id(k) for k, (st, _) in off[test][2].items() if st == 'skip'}
        on_skip = {subtest_id(k) for k, (st, _) in on[test][2].items() if st == 'skip'}
        if off_skip or on_skip:
            skipped.append((test, off_skip, on_skip, skip_summary(off[test][2])))
    # Skips are named here, so that they are seen: a sub-test that skips
    # only with hinting on is a failure, one that skips in both boots is
    # listed (with the reason, mostly config options off in this guest).
    new = ['%s: %s' % (t, ', '.join(sorted(b - a)[:5])) for t, a, b, _ in skipped if b - a]
    results.append(('selftests-mm: no sub-test skips with hinting on that ran with it off',
                    not new, 'skip only with hinting on: ' + '; '.join(new) if new else
                    'skipped in both: ' + '; '.join('%s %s' % (t, summary)
                                                    for t, _, _, summary in skipped)))
    return results


# Each self-test boots a guest that must fail, through this very script,
# and checks the exit status and that the output names the cause.  The
# KUnit one also checks that the passing case next to the failing one is
# counted as passed: a runner that failed everything would pass otherwise.
SELFTESTS = [
    ('selftest-fail', 120, [r'FAIL guest: deliberate-failure: exit status 3']),
    ('selftest-kunit', 120,
     [r'FAIL kunit: pagehint_runner_selftest\.pagehint_selftest_fails: FAILURE',
      r'ok   kunit: pagehint_runner_selftest\.pagehint_selftest_passes']),
    # a hung guest also leaves, in the run's output, where its vCPUs were
    # and how its console ended: all that CI keeps of it
    ('selftest-hang', 45, [r'FAIL boot selftest-hang: finished: guest timed out after',
                           r'where its vCPUs were before it was killed:\n    \| sample 0: '
                           r'cpu0 [a-z_]\w*\+0x[0-9a-f]+, cpu1 [a-z_]\w*\+0x',
                           r'the console ended with:\n(    \| .*\n)*    \| pagehint-guest: '
                           r'--- deliberate-hang']),
]


def stage_selftest():
    results = []
    for plan, timeout, expected in SELFTESTS:
        p = run_cmd([sys.executable, os.path.abspath(__file__), 'boot', plan,
                     '--timeout', str(timeout)], preexec_fn=vm.die_with_parent)
        missing = [e for e in expected if not re.search(e, p.stdout)]
        passed = p.returncode != 0 and not missing
        results.append(('runner: %s fails the run and names the cause' % plan, passed,
                        '' if passed else 'exit %d, expected %s in: %s'
                        % (p.returncode, missing, p.stdout[-600:])))
    return results


def report(results):
    for name, passed, why in results:
        say(name, passed, why)
    failed = sum(1 for _, passed, _ in results if not passed)
    print('%d passed, %d failed' % (len(results) - failed, failed))
    return 1 if failed else 0


stage_libvirt = libvirt_check.stage_libvirt

STAGES = (stage_host, stage_series, stage_guest, stage_hinting, stage_libvirt,
          stage_selftests_mm, stage_s390, stage_selftest)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    sub.add_parser('all')
    b = sub.add_parser('boot')
    b.add_argument('plan')
    b.add_argument('--timeout', type=int, default=600)
    st = sub.add_parser('stage')
    st.add_argument('names', nargs='+', choices=[f.__name__[len('stage_'):] for f in STAGES])
    args = ap.parse_args()
    vm.exit_on_sigterm()

    if args.cmd == 'boot':
        return report(boot(args.plan, timeout=args.timeout))
    results = []
    for stage in STAGES:
        if args.cmd == 'stage' and stage.__name__[len('stage_'):] not in args.names:
            continue
        print('== ' + stage.__name__[len('stage_'):], flush=True)
        stage_results = stage()
        for r in stage_results:
            say(*r)
        results += stage_results
    print()
    failed = [r for r in results if not r[1]]
    if failed:
        print('failures:')
        for name, _, why in failed:
            print('  %s: %s' % (name, why))
    print('%d passed, %d failed' % (len(results) - len(failed), len(failed)))
    return 1 if failed else 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print('check: interrupted; its guests and daemons are stopped', file=sys.stderr)
        sys.exit(130)
