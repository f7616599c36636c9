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
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guestlog  # noqa: E402
import vm  # noqa: E402

TOP = vm.TOP
PATCHES = os.path.join(TOP, 'kernel', 'patches')

# KUnit suites the check guest must run: one missing is a failure, not a
# silently smaller count.
CHECK_KUNIT_SUITES = ['page_states']


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
    for patch in open(series).read().split():
        p = run_cmd(['perl', checkpatch, '--strict', '--no-tree', '--terse',
                     os.path.join(PATCHES, patch)])
        problems = [l for l in p.stdout.splitlines() if re.search(r'(ERROR|WARNING|CHECK):', l)]
        results.append(('series: checkpatch --strict ' + patch, not problems and p.returncode == 0,
                        ' / '.join(problems[:3])))
    return results


def boot(plan, expect_suites=(), timeout=600, mem_mib=512):
    guest = vm.Guest(plan, plan=plan, mem_mib=mem_mib, timeout=timeout)
    result = guest.run()
    return guestlog.evaluate(result, 'boot ' + plan, expect_suites)


def stage_guest():
    return boot('check', CHECK_KUNIT_SUITES)


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
    for stage in (stage_host, stage_series, stage_guest, stage_selftest):
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
