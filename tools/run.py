#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The main job ("make run"): boot a guest, run the default workload and
show, second by second, how much of the guest's RAM the host holds."""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guestlog  # noqa: E402
import vm  # noqa: E402


def resident_mib(path):
    """Host memory behind a shared RAM file: its allocated blocks."""
    try:
        return os.stat(path).st_blocks * 512 / (1 << 20)
    except FileNotFoundError:
        return 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--variant', default='release', choices=('debug', 'release'))
    ap.add_argument('--mem', type=int, default=1024, help='guest RAM in MiB')
    ap.add_argument('--plan', default='run')
    args = ap.parse_args()

    guest = vm.Guest('run', plan=args.plan, variant=args.variant, mem_mib=args.mem,
                     timeout=900)
    try:
        guest.start()
        print('run: %s guest, %d MiB, %s; host-resident guest RAM:'
              % (args.variant, args.mem, guest.accel_used))
        while guest.proc.poll() is None:
            time.sleep(1)
            print('  %5.0f s  %6.1f MiB' % (time.monotonic() - guest.started,
                                             resident_mib(guest.path('ram'))), flush=True)
        result = guest.wait()
    finally:
        guest.cleanup()
    print('run: what the guest did:')
    for line in result.tap.splitlines():
        if line.startswith('log: '):
            print('  ' + line[len('log: '):])
    results = guestlog.evaluate(result, 'boot ' + args.plan)
    for name, passed, why in results:
        print('%s %s%s' % ('ok  ' if passed else 'FAIL', name, ': ' + why if why else ''))
    print('run: logs in %s' % result.run_dir)
    return 0 if all(r[1] for r in results) else 1


if __name__ == '__main__':
    sys.exit(main())
