#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The test runner behind "make check".

  check.py all          every stage below, then "N passed, N failed"
  check.py boot PLAN    boot the guest once with PLAN and judge the run

Stages: host unit tests, the patch series (exported, checkpatch --strict),
the guest (its tests, KUnit, a clean console), and the runner's own
self-test: a failing guest test, a failing KUnit case and a hung guest
must each fail a run, with a message that names the cause.
Exits non-zero when anything failed.
"""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guestlog  # noqa: E402
import vm  # noqa: E402

TOP = vm.TOP
PATCHES = os.path.join(TOP, 'kernel', 'patches')

# KUnit suites the check guest must run: one missing is a failure, not a
# silently smaller count.
CHECK_KUNIT_SUITES = ['page_states', 'pagehint_table']


def say(name, passed, why=''):
    print('%s %s%s' % ('ok  ' if passed else 'FAIL', name, ': ' + why if why else ''),
          flush=True)


def run_cmd(cmd, **kw):
    return subprocess.run(cmd, cwd=TOP, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, **kw)


def stage_host():
    """Host unit tests: every test binary prints cmocka's TAP."""
    results = []
    for test in sorted(glob.glob(os.path.join(TOP, 'build', 'host', 'test_*'))):
        p = run_cmd([test], env=dict(os.environ, CMOCKA_MESSAGE_OUTPUT='TAP'))
        cases = re.findall(r'^(ok|not ok) \d+ - (.*)$', p.stdout, re.M)
        for status, case in cases:
            results.append(('host: %s.%s' % (os.path.basename(test), case), status == 'ok',
                            '' if status == 'ok' else p.stdout[-800:]))
        if p.returncode != 0 and all(s == 'ok' for s, _ in cases):
            results.append(('host: ' + os.path.basename(test), False,
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
    return results


def boot(plan, expect_suites=(), timeout=600, mem_mib=512, kunit_detail=True):
    guest = vm.Guest(plan, plan=plan, mem_mib=mem_mib, timeout=timeout)
    result = guest.run()
    return guestlog.evaluate(result, 'boot ' + plan, expect_suites, kunit_detail)


def stage_guest():
    return boot('check', CHECK_KUNIT_SUITES)


def wait_for(pred, timeout, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(step)
    return None


def daemon_status(guest):
    """The last status line pagehintd wrote, as a dict ({} if none)."""
    try:
        with open(guest.path('pagehintd.jsonl')) as f:
            lines = [l for l in f.read().splitlines() if l.startswith('{')]
        return json.loads(lines[-1]) if lines else {}
    except (FileNotFoundError, ValueError):
        return {}


def hinted_boot(plan, scenario, mem_mib=1024, timeout=300, prepare=None, daemon=True,
                daemon_args=(), cmdline=''):
    """Boot PLAN with pagehintd; SCENARIO(guest) acts on the running guest
    and returns its own results.  The run's results come after them."""
    guest = vm.Guest(plan, plan=plan, mem_mib=mem_mib, timeout=timeout, cmdline=cmdline,
                     daemon_args=list(daemon_args) if daemon else None, before_qemu=prepare)
    results = []
    try:
        guest.start()
        results = scenario(guest) if scenario else []
        result = guest.wait()
    finally:
        guest.cleanup()
    return results + guestlog.evaluate(result, 'boot ' + plan, kunit_detail=False)


def give_back_scenario(guest):
    """512 MiB freed in the guest must leave the host within 1 s."""
    name = 'hinting: 512 MiB freed in the guest leaves the host within 1 s'
    if not wait_for(lambda: 'mark: allocated' in guest.read('tap.log'), 300):
        return [(name, False, 'the guest never allocated (no mark in tap.log)')]
    time.sleep(1)
    before = guest.resident_mib()
    if not wait_for(lambda: 'mark: freed' in guest.read('tap.log'), 60, step=0.005):
        return [(name, False, 'the guest never freed (no mark in tap.log)')]
    freed_at = time.monotonic()
    target = before - 0.99 * 512
    done = wait_for(lambda: guest.resident_mib() <= target, 1.0, step=0.01)
    took = time.monotonic() - freed_at
    after = guest.resident_mib()
    return [(name, bool(done),
             'host held %.0f MiB before the free, %.0f MiB %.2f s after (wanted <= %.0f)'
             % (before, after, took, target))]


def stress_scenario(guest):
    wait_for(lambda: guest.proc.poll() is not None, guest.timeout)
    status = daemon_status(guest)
    dropped = status.get('dropped', {}).get('unused', 0)
    return [('hinting: pagehintd gave back memory during the stress test', dropped > 0,
             'dropped %d unused frames, guest busy waits %s'
             % (dropped, status.get('guest', {}).get('busy_waits')))]


def reboot_scenario(guest):
    wait_for(lambda: guest.proc.poll() is not None, guest.timeout)
    log = guest.read('pagehintd.log')
    boots = guest.read('console.log').count('page hinting on')
    return [('hinting: pagehintd started a new epoch for the reboot',
             'guest reboots: new table epoch' in log, log.strip()[-300:]),
            ('hinting: both boots attached', boots == 2, '%d attached' % boots)]


def daemon_restart_scenario(guest):
    name = 'hinting: pagehintd killed with SIGKILL and restarted'
    if not wait_for(lambda: 'mark: started' in guest.read('tap.log'), 300):
        return [(name, False, 'the guest test never started')]
    time.sleep(3)
    guest.stop_daemon(signal.SIGKILL)
    before = daemon_status(guest).get('dropped', {}).get('unused', 0)
    time.sleep(1)
    guest.start_daemon()
    time.sleep(4)
    after = daemon_status(guest).get('dropped', {}).get('unused', 0)
    return [(name, after > before and guest.daemon.poll() is None,
             'frames given back: %d before the kill, %d after the restart; %s'
             % (before, after, guest.read('pagehintd.log').strip()[-200:]))]


def volatile_scenario(guest):
    wait_for(lambda: guest.proc.poll() is not None, guest.timeout)
    status = daemon_status(guest)
    dropped = status.get('dropped', {}).get('volatile', 0)
    return [('hinting: pagehintd dropped volatile page cache', dropped > 8000,
             'dropped %d volatile frames' % dropped)]


def corrupt_magic(guest):
    """Damage the table the way a stale or foreign file would look."""
    with open(guest.path('table'), 'r+b') as f:
        f.write(b'NOTHINTS')


def stage_hinting():
    """Integration: guest, table and pagehintd together."""
    results = []
    results += hinted_boot('give-back', give_back_scenario)
    results += hinted_boot('stress', stress_scenario)
    results += hinted_boot('reboot', reboot_scenario)
    results += hinted_boot('daemon-restart', daemon_restart_scenario)
    results += hinted_boot('bad-table', None, prepare=corrupt_magic, daemon=False)
    results += hinted_boot('volatile', volatile_scenario, daemon_args=['--chaos'],
                           cmdline='page_states.volatile_scan_ms=100', timeout=480)
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
    ('selftest-hang', 45, [r'FAIL boot selftest-hang: finished: guest timed out after']),
]


def stage_selftest():
    results = []
    for plan, timeout, expected in SELFTESTS:
        p = run_cmd([sys.executable, os.path.abspath(__file__), 'boot', plan,
                     '--timeout', str(timeout)])
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


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    sub.add_parser('all')
    b = sub.add_parser('boot')
    b.add_argument('plan')
    b.add_argument('--timeout', type=int, default=600)
    args = ap.parse_args()

    if args.cmd == 'boot':
        return report(boot(args.plan, timeout=args.timeout))
    results = []
    for stage in (stage_host, stage_series, stage_guest, stage_hinting, stage_selftest):
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
    sys.exit(main())
