#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The main job ("make run"): boot the guest twice with the same workload,
once unhinted (page_states=off) and once with pagehintd, and show second by
second how much of the guest's RAM the host holds in each."""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guestlog  # noqa: E402
import plot  # noqa: E402
import vm  # noqa: E402


# A guest that says nothing on its console or its results port for this
# long has hung: the run plan's slowest step, reading the data disk under
# TCG, prints within a minute.
STALL_S = 120


def trace(name, args, **opts):
    """Boot once; return (results, [(seconds, MiB held by the host)])."""
    guest = vm.Guest('run-' + name, plan=args.plan, variant=args.variant,
                     mem_mib=args.mem, timeout=900, **opts)
    samples = []

    def sample():
        samples.append((time.monotonic() - guest.started, guest.resident_mib()))
        print('  %5.0f s  host holds %6.1f MiB' % samples[-1], flush=True)

    try:
        guest.start()
        print('run: %s guest: %s, %d MiB, %s' % (name, args.variant, args.mem,
                                                guest.accel_used), flush=True)
        result = guest.wait(stall=STALL_S, tick=sample)
    finally:
        guest.cleanup()
    if result.status == 'stalled':
        print('run: the %s guest said nothing for %d s: stopped it' % (name, STALL_S),
              flush=True)
    hinted = opts.get('daemon_args') is not None
    return guestlog.evaluate(result, 'boot %s (%s)' % (args.plan, name),
                             attached=hinted), samples, result


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--variant', default='release', choices=('debug', 'release'))
    ap.add_argument('--mem', type=int, default=1024, help='guest RAM in MiB')
    ap.add_argument('--plan', default='run')
    args = ap.parse_args()
    vm.exit_on_sigterm()

    plain, plain_samples, _ = trace('unhinted', args, cmdline='page_states=off')
    hinted, hinted_samples, result = trace('hinted', args, daemon_args=[])

    print('\nrun: what the guest did (hinted run):')
    for line in result.tap.splitlines():
        if line.startswith('log: '):
            print('  ' + line[len('log: '):])
    print('\nrun: host-resident guest RAM, MiB')
    print('  %5s  %9s  %9s' % ('s', 'unhinted', 'hinted'))
    for i in range(max(len(plain_samples), len(hinted_samples))):
        cell = lambda s: '%9.1f' % s[i][1] if i < len(s) else '%9s' % ''  # noqa: E731
        print('  %5d  %s  %s' % (i + 1, cell(plain_samples), cell(hinted_samples)))
    if plain_samples and hinted_samples:
        print('\nrun: at the end the host holds %.0f MiB unhinted and %.0f MiB hinted: '
              'pagehint gave back %.0f MiB' % (plain_samples[-1][1], hinted_samples[-1][1],
                                               plain_samples[-1][1] - hinted_samples[-1][1]))
    if plain_samples and hinted_samples:
        series = {'unhinted': plain_samples, 'hinted': hinted_samples}
        svg = os.path.join(vm.BUILD, 'logs', 'run-held.svg')
        print('\n' + plot.held(series, svg=svg, columns=100).rstrip('\n'))
        print('run: the same picture as an image: %s' % svg)
    results = plain + hinted
    for name, passed, why in results:
        if not passed:
            print('FAIL %s: %s' % (name, why))
    print('run: logs in %s' % os.path.join(vm.BUILD, 'logs'))
    return 0 if all(r[1] for r in results) else 1


if __name__ == '__main__':
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print('run: interrupted; its guests and daemons are stopped', file=sys.stderr)
        sys.exit(130)
