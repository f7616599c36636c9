#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make bench: host-resident guest memory and what hinting costs the guest,
with no hinting, with virtio-balloon free page reporting and with pagehint;
same kernel, same workload.

Every setup boots BENCH_BOOTS times (3 by default), the setups interleaved
(one boot of each, then the next round), so that a slow minute of the host
hits every setup alike.  The tables give the median of the boots and, in
brackets, their range.  Then the other sections, the density benchmark
(tools/density.py) last.  Writes docs/bench.md (and prints it), the record
of one commit: each boot and section is kept per commit (tools/measured.py),
so that a bench that was stopped goes on where it stopped.

  tools/bench.py [s390|paired|libvirt|idle|idle-guest|density]
prints one section alone."""

import hashlib
import mmap
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import density  # noqa: E402
import libvirt_check  # noqa: E402
import measured  # noqa: E402
import plot  # noqa: E402
import vm  # noqa: E402
from check import GUEST_EPOCH_AT, HOST_EPOCH_AT, SUMMARY_OFFSET_AT  # noqa: E402

BENCH_DISKS = os.path.join(vm.BUILD, 'bench-disks')
SOURCE_TREE = os.path.join(vm.BUILD, 'linux', 'fs')
DISK_PARAMS = dict(DATA_MIB='300', SWAP_MIB='64')
SAMPLE_S = 0.1
PAGE = 4096

# "pagehint, no daemon": the guest attaches to a table that pagehintd
# init made, and no daemon runs, so nothing is given back and no host
# wants memory (host_wants 0): the page cycle pays the unused and stable
# transitions, and the scanner makes no cache volatile.  "pagehint,
# default" is pagehintd with no options: the aged policy, 2 s, no target.
SETUPS = [
    ('no hinting', dict(cmdline='page_states=off')),
    ('free page reporting', dict(cmdline='page_states=off', balloon=True)),
    ('pagehint, no daemon', dict()),
    ('pagehint, default', dict(daemon_args=[])),
    ('pagehint, immediate, target 0', dict(daemon_args=['--policy', 'immediate',
                                                        '--target-mib', '0'])),
    ('pagehint, aged 2 s, target 0', dict(daemon_args=['--policy', 'aged', '--age-ms', '2000',
                                                       '--target-mib', '0'])),
]
BASE, NO_DAEMON, DEFAULT = 'no hinting', 'pagehint, no daemon', 'pagehint, default'
IMMEDIATE, AGED = 'pagehint, immediate, target 0', 'pagehint, aged 2 s, target 0'
PLOT = os.path.join(vm.TOP, 'docs', 'bench-held.svg')


def disks_stamp():
    """What the bench disks are made from: the script, its parameters and
    the kernel tree whose fs/ the grep reads."""
    h = hashlib.sha256()
    with open(os.path.join(vm.TOP, 'guest', 'mkdisks.sh'), 'rb') as f:
        h.update(f.read())
    h.update(repr(sorted(DISK_PARAMS.items())).encode())
    head = subprocess.run(['git', '-C', os.path.join(vm.BUILD, 'linux'), 'rev-parse', 'HEAD'],
                          capture_output=True, text=True)
    h.update(head.stdout.encode())
    return h.hexdigest()


def make_disks():
    """300 MiB of files to read, and a source tree to grep; made again
    whenever what they are made from changed."""
    stamp_file = os.path.join(BENCH_DISKS, 'stamp')
    stamp = disks_stamp()
    try:
        with open(stamp_file) as f:
            if f.read().strip() == stamp:
                return
    except FileNotFoundError:
        pass
    subprocess.run(['rm', '-rf', BENCH_DISKS], check=True)
    subprocess.run([os.path.join(vm.TOP, 'guest', 'mkdisks.sh')], check=True,
                   env=dict(os.environ, DISKS_DIR=BENCH_DISKS, SOURCE_DIR=SOURCE_TREE,
                            **DISK_PARAMS))
    with open(stamp_file, 'w') as f:
        f.write(stamp + '\n')


def held_mib(path, ranges):
    """How much of the page frames in RANGES (first, end) the host holds:
    the allocated parts of the guest's RAM file there."""
    held = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        for first, end in ranges:
            pos, stop = first * PAGE, end * PAGE
            while pos < stop:
                try:
                    data = os.lseek(fd, pos, os.SEEK_DATA)
                except OSError:         # ENXIO: no data after pos
                    break
                if data >= stop:
                    break
                hole = min(os.lseek(fd, data, os.SEEK_HOLE), stop)
                held += hole - data
                pos = hole
    finally:
        os.close(fd)
    return held / (1 << 20)


def measure(name, opts, variant, mem_mib):
    guest = vm.Guest('bench', plan='bench', variant=variant, mem_mib=mem_mib, timeout=900,
                     disks_dir=BENCH_DISKS, **opts)
    samples, marks = [], {}
    try:
        guest.start()
        while guest.proc.poll() is None:
            now = time.monotonic() - guest.started
            samples.append((now, guest.resident_mib()))
            for m in re.findall(r'^mark: (\S+)', guest.read('tap.log'), re.M):
                marks.setdefault(m, now)
            time.sleep(SAMPLE_S)
        result = guest.wait()
        reserved = re.search(r'^mark: reserved-pfns((?: \d+-\d+)*)$', result.tap, re.M)
        ranges = [tuple(map(int, r.split('-'))) for r in reserved.group(1).split()] \
            if reserved else []
        reserved_held = held_mib(guest.path('ram'), ranges) if reserved else float('nan')
    finally:
        guest.cleanup()
    ok = 'plan: done' in result.tap and 'not ok' not in result.tap

    def at(t):
        before = [mib for when, mib in samples if when <= t]
        return before[-1] if before else float('nan')

    def settled(since, start, end):
        """Resident MiB at END, and how long after START the host got
        within 5% of it: None when the most it held from SINCE to START
        was less than 16 MiB above that (a host that gives back at once
        has done so by the time START is seen, or during the read)."""
        if None in (since, start, end):
            return float('nan'), None
        final = at(end)
        peak = max([mib for when, mib in samples if since <= when <= start] + [at(start)])
        if peak - final < 16:
            return final, None
        for when, mib in samples:
            if when >= start and mib <= final * 1.05 + 1:
                return final, when - start
        return final, None

    def number(pattern):
        m = re.search(pattern, result.tap, re.M)
        return float(m.group(1)) if m else None

    final, given_back = settled(marks.get('written'), marks.get('deleted'), marks.get('end'))
    cache, cache_back = settled(marks.get('end'), marks.get('read'), marks.get('read-end'))
    booted = marks.get('booted')
    grep = re.search(r'^mark: grep-cache-kib (-?\d+) volatile-kib (-?\d+)', result.tap, re.M)
    return dict(ok=ok, accel=guest.accel_used,
                boot=at(booted + 3.9) if booted else None,
                written=at(marks['written']) if 'written' in marks else None,
                final=final, given_back=given_back,
                read=at(marks['read']) if 'read' in marks else None,
                cache=cache, cache_back=cache_back,
                noncache=(number(r'^mark: noncache-kib (\d+)') or float('nan')) / 1024,
                reserved=reserved_held,
                grep_share=100.0 * int(grep.group(2)) / int(grep.group(1))
                if grep and int(grep.group(1)) > 0 else None,
                read_ns=number(r'^mark: readloop-ns-per-mib ([\d.]+)'),
                read_rereads=number(r'^mark: readloop-reread-frames (\d+)'),
                hot_ns=number(r'^mark: readloop-hot-ns-per-mib ([\d.]+)'),
                hot_rereads=number(r'^mark: readloop-hot-reread-frames (\d+)'),
                cycle_ns=number(r'^mark: pagecycle-ns ([\d.]+)'),
                fault1_ns=number(r'^mark: pagefault1-ns ([\d.]+)'),
                samples=samples)


def host_swap():
    with open('/proc/meminfo') as f:
        kib = re.search(r'^SwapTotal:\s+(\d+)', f.read(), re.M)
    return 'SwapTotal %s kB' % (kib.group(1) if kib else '?')


def numbers(values):
    return [v for v in values if v is not None and v == v]


def fmt(values, spec='%.0f'):
    """Median and range of a setup's boots: '41 [40, 44]'.  SPEC is a
    format or a function that formats one value."""
    show = spec if callable(spec) else (lambda v: spec % v)
    got = numbers(values)
    if not got:
        return '-'
    med, lo, hi = (show(v) for v in (statistics.median(got), min(got), max(got)))
    return med if lo == hi else '%s [%s, %s]' % (med, lo, hi)


def fmt_within(values):
    """Time to give back: 'none' for boots that gave back nothing, '<0.1'
    for a boot that had given it back by the first sample after the mark."""
    got = numbers(values)
    if not got:
        return 'none'
    text = fmt(got, lambda v: '<%.1f' % SAMPLE_S if v < SAMPLE_S else '%.1f' % v)
    missing = len(values) - len(got)
    return text + ('; none in %d of %d boots' % (missing, len(values)) if missing else '')


def ratio(rows, key, base):
    """Each boot's KEY over the median of the base setup's."""
    ref = numbers(r[key] for r in base)
    if not ref:
        return []
    ref = statistics.median(ref)
    return [r[key] / ref if r[key] else None for r in rows]


# The host's side alone: an attached table that nothing changes, at these
# guest sizes, and pagehintd's time on a CPU over IDLE_S seconds.
IDLE_SIZES_GIB = (1, 4, 16, 64)
IDLE_S = 20
IDLE_WARMUP_S = 3
IDLE_POLICIES = (('immediate', ['--policy', 'immediate']), ('aged 2 s (default)', []))


def idle_daemon_cpu(gib, args, rewrite_summary):
    """pagehintd's CPU share of a core over IDLE_S s on an attached table
    of a GIB GiB guest whose frames stay as they are; with REWRITE_SUMMARY
    a guest that sets every bit of the summary every 5 ms (what a pass
    cost before there was a summary, and the most a guest can make it
    cost)."""
    with tempfile.TemporaryDirectory(dir='/dev/shm', prefix='pagehint-idle-') as d:
        table, ram = os.path.join(d, 'table'), os.path.join(d, 'ram')
        subprocess.run([vm.PAGEHINTD, 'init', '--table', table, '--ram', ram,
                        '--mem-mib', str(gib * 1024)], check=True)
        with open(table, 'r+b') as f:
            m = mmap.mmap(f.fileno(), 0)
        epoch = m[HOST_EPOCH_AT:HOST_EPOCH_AT + 8]
        m[GUEST_EPOCH_AT:GUEST_EPOCH_AT + 8] = epoch
        nr_frames = struct.unpack_from('<Q', m, 24)[0]
        summary = struct.unpack_from('<Q', m, SUMMARY_OFFSET_AT)[0]
        summary_bytes = (nr_frames + 64 * 512 - 1) // (64 * 512) * 8
        daemon = subprocess.Popen([vm.PAGEHINTD, 'run', '--table', table, '--ram', ram] + args,
                                  stderr=subprocess.DEVNULL)
        try:
            # after its start (the first pass reads every chunk), not counted
            start, cpu = time.monotonic() + IDLE_WARMUP_S, None
            while time.monotonic() < start + IDLE_S:
                if cpu is None and time.monotonic() >= start:
                    cpu = on_cpu_s(daemon.pid)
                if rewrite_summary:
                    m[summary:summary + summary_bytes] = b'\xff' * summary_bytes
                time.sleep(0.005 if rewrite_summary else 0.1)
            cpu = on_cpu_s(daemon.pid) - cpu
        finally:
            daemon.terminate()
            daemon.wait()
            m.close()
    return cpu / IDLE_S


def on_cpu_s(pid):
    """The time PID has run on a CPU, in seconds (the scheduler's count,
    in nanoseconds, rather than the 10 ms ticks of its rusage)."""
    with open('/proc/%d/schedstat' % pid) as f:
        return int(f.read().split()[0]) / 1e9


def idle_section():
    """Markdown lines: the host's idle cost by guest size."""
    lines = ['## What an idle guest costs the host',
             '',
             'pagehintd alone on an attached table of a guest whose frames do not change (no '
             'guest runs: the table and a sparse RAM file in /dev/shm), %d s each after its '
             'first %d s (its start, and its first pass, which reads every chunk), its time on '
             'a CPU (/proc/PID/schedstat) as a share of one host core. "Every chunk '
             'named": a guest that sets every bit of the change summary every 5 ms, so that '
             'each pass reads the whole table, which every pass did before the summary; it is '
             'also the most a guest can make the daemon read.' % (IDLE_S, IDLE_WARMUP_S),
             '',
             '| policy | guest | idle | every chunk named |',
             '|---|---|---|---|']
    for policy, args in IDLE_POLICIES:
        for gib in IDLE_SIZES_GIB:
            print('bench: idle host cost, %s, %d GiB' % (policy, gib), flush=True)
            lines.append('| %s | %d GiB | %.2f%% | %.1f%% |' % (
                policy, gib, 100 * idle_daemon_cpu(gib, args, False),
                100 * idle_daemon_cpu(gib, args, True)))
    return lines


# Real guests at these sizes, idle for half a minute, then 1 GiB freed:
# pagehintd's default and target 0 (the host wants memory, so the
# scanner walks its lists).
GUEST_IDLE_SIZES_GIB = (1, 4, 16)
GUEST_IDLE_SETUPS = (('no hinting', dict(cmdline='page_states=off')),
                     ('pagehint, default', dict(daemon_args=[])),
                     ('pagehint, target 0', dict(daemon_args=['--target-mib', '0'])))
IDLE_GUEST_S = 30                           # as guest/plans/bench-idle sleeps
USER_HZ = 100                               # /proc/stat's unit on x86


def idle_guest(gib, opts, variant):
    """One boot of the bench-idle plan: the guest's busy share of its
    vCPUs and pagehintd's share of a host core while it idles, the folios
    its scanner looked at, and how long and how much daemon CPU giving
    back what it freed took."""
    guest = vm.Guest('bench-idle', plan='bench-idle', variant=variant, mem_mib=gib * 1024,
                     timeout=900, disks_dir=BENCH_DISKS, status=False, **opts)
    marks, samples = {}, []      # samples: (s, MiB held, pagehintd's on-CPU s)
    try:
        guest.start()
        while guest.proc.poll() is None:
            now = time.monotonic() - guest.started
            daemon = guest.daemon.pid if guest.daemon and guest.daemon.poll() is None else None
            try:
                cpu = on_cpu_s(daemon) if daemon else None
            except OSError:         # it exited meanwhile
                cpu = None
            samples.append((now, guest.resident_mib(), cpu))
            for m in re.findall(r'^mark: (\S+)', guest.read('tap.log'), re.M):
                marks.setdefault(m, len(samples) - 1)
            time.sleep(SAMPLE_S)
        result = guest.wait()
    finally:
        guest.cleanup()
    row = dict(ok='plan: done' in result.tap and 'not ok' not in result.tap,
               accel=guest.accel_used, guest_busy=None, daemon_idle=None, scanned_min=None,
               timer_irqs_min=None, looks_min=None, freed_mib=None, back_s=None,
               back_cpu_s=None)
    idle = re.search(r'^mark: idle-busy-ticks (\d+) scanned (\d+) cpus (\d+) '
                     r'timer-irqs (\d+) looks (\d+)$', result.tap, re.M)
    if idle:
        ticks, scanned, cpus, irqs, looks = map(int, idle.groups())
        row['guest_busy'] = ticks / USER_HZ / (IDLE_GUEST_S * cpus)
        row['scanned_min'] = scanned * 60 // IDLE_GUEST_S
        row['timer_irqs_min'] = irqs * 60 // IDLE_GUEST_S
        row['looks_min'] = looks * 60 // IDLE_GUEST_S
    if 'idle-start' in marks and 'idle-end' in marks:
        (t0, _, c0), (t1, _, c1) = samples[marks['idle-start']], samples[marks['idle-end']]
        if c0 is not None and c1 is not None:
            row['daemon_idle'] = (c1 - c0) / (t1 - t0)
    freed = re.search(r'^mark: give-back-mib (\d+)$', result.tap, re.M)
    if freed and 'allocated' in marks and 'freed' in marks:
        row['freed_mib'] = int(freed.group(1))
        held = max(mib for _, mib, _ in samples[marks['allocated']:marks['freed'] + 1])
        t0, _, c0 = samples[marks['freed']]
        for t, mib, c in samples[marks['freed']:]:
            if mib <= held - 0.95 * row['freed_mib']:
                row['back_s'] = t - t0
                row['back_cpu_s'] = c - c0 if c is not None and c0 is not None else None
                break
    return row


def idle_guest_section(variant):
    """Markdown lines: real idle guests by size."""
    rows = []
    for name, opts in GUEST_IDLE_SETUPS:
        for gib in GUEST_IDLE_SIZES_GIB:
            print('bench: idle guest, %s, %d GiB' % (name, gib), flush=True)
            rows.append((name, gib, idle_guest(gib, opts, variant)))
    pct = lambda v: '-' if v is None else '%.2f%%' % (100 * v)  # noqa: E731
    num = lambda v, spec='%.1f': '-' if v is None else spec % v  # noqa: E731
    lines = ['## What an idle guest costs, guest and host',
             '',
             'Real %s guests of each size (sparse RAM files, %s kernel): without hinting '
             '(`page_states=off`, no daemon), and '
             'with pagehintd\'s default (aged 2 s, no target: the host wants no memory and the '
             'guest\'s scanner rests, each rest twice as long as the last, up to a minute) and '
             'target 0 (the host wants all it can get: the scanner walks its LRU lists every '
             'second, at most `volatile_scan_folios` folios of each). The guest reads 300 MiB of '
             'files into its page cache, settles for 5 s, then does nothing for %d s: the '
             'guest\'s busy share of its vCPUs (/proc/stat: all it did, hinting or not), its '
             'local timer interrupts per minute (its wakeups, all causes), its scanner\'s looks '
             '(resting or walking) and the folios they looked at per minute, and pagehintd\'s '
             'share of a host core (schedstat; it runs without the status report of the tests, '
             'which counts every frame\'s state each second). Then the guest allocates 1 GiB '
             '(half of a 1 GiB guest), holds it 2 s and frees it: "given back within" runs from '
             'the free to the host holding 95%% of it less, and "its CPU" is pagehintd\'s on-CPU '
             'time over that.' % (rows[0][2]['accel'].upper(), variant, IDLE_GUEST_S),
             '',
             '| setup | guest | guest busy, idle | timer irqs / min | scanner looks / min | '
             'folios / min | pagehintd, idle | freed (MiB) | given back within (s) | '
             'its CPU (s) |',
             '|---|---|---|---|---|---|---|---|---|---|']
    for name, gib, r in rows:
        lines.append('| %s%s | %d GiB | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            name, '' if r['ok'] else ' (guest failed)', gib, pct(r['guest_busy']),
            num(r['timer_irqs_min'], '%d'), num(r['looks_min'], '%d'),
            num(r['scanned_min'], '%d'), pct(r['daemon_idle']), num(r['freed_mib'], '%d'),
            num(r['back_s']), num(r['back_cpu_s'], '%.2f')))
    return lines


def paired_section(variant):
    """Markdown lines: the page cycle and page_fault1 with hinting attached
    and detached, alternating in one boot (guest/plans/bench-paired)."""
    print('bench: paired, hinting on and off in one boot', flush=True)
    guest = vm.Guest('bench-paired', plan='bench-paired', variant=variant, mem_mib=1024,
                     timeout=1200, disks_dir=BENCH_DISKS, daemon_args=[], status=False)
    try:
        guest.start()
        result = guest.wait()
    finally:
        guest.cleanup()
    rounds = [tuple(map(float, m)) for m in re.findall(
        r'^mark: paired \d+ on (\S+) (\S+) off (\S+) (\S+)$', result.tap, re.M)]
    lines = ['## Hinting on and off in one boot',
             '',
             'TCG\'s speed drifts between boots by more than the 1%% the goal is about, so this '
             'boot (%s, %s kernel, 1 GiB, pagehintd\'s default beside it) alternates: each '
             'round runs the page cycle (64 MiB x 8) and page_fault1 (two threads, 128 MiB x 4) '
             'with the guest attached to its table, then with the driver unbound (the hooks '
             'off, as with `page_states=off`), and binds it again. The ratio per round is '
             'attached over detached; the table gives the median and the range of the %d '
             'rounds.' % (guest.accel_used.upper(), variant, len(rounds)),
             '']
    if not rounds or 'plan: done' not in result.tap:
        return lines + ['The boot failed: %s.' % result.status, '']
    lines += ['| measure | attached (ns) | detached (ns) | attached / detached, median '
              '[range] |', '|---|---|---|---|']
    for i, what in enumerate(('page cycle', 'page_fault1')):
        on = [r[i] for r in rounds]
        off = [r[i + 2] for r in rounds]
        per_round = [a / b for a, b in zip(on, off)]
        lines.append('| %s | %.1f | %.1f | %.3f [%.3f-%.3f] |' % (
            what, statistics.median(on), statistics.median(off), statistics.median(per_round),
            min(per_round), max(per_round)))
    return lines


# The fairness of host mode: 128 MiB freed in a domain, given back by one
# pagehintd host, alone and beside a hostile domain (guest/tests/tablejunk).
FAIR_ROUNDS = 6
FAIR_START_MIB = 1
FAIR_GIVEN_BACK_MIB = 100


def held_now(path):
    """MiB the host holds of a RAM file: its allocated blocks."""
    return os.stat(path).st_blocks * 512 / (1 << 20)


def libvirt_section(variant):
    """Markdown lines: how long one daemon takes to give a domain's freed
    128 MiB back, with the domain alone and beside a hostile one, in one
    run (guest/plans/libvirt-bench)."""
    print('bench: libvirt, a domain alone and beside a hostile one', flush=True)
    lv = libvirt_check.Libvirt(variant)
    times = []
    try:
        lv.start()
        lv.start_daemon()
        dom = lv.define('bench', 256, plan='libvirt-bench')
        dom.start()
        served = libvirt_check.said(lv, r'^pagehintd: domain bench \(.*\): serving, table \S+, '
                                    r'RAM (\S+),', 60)
        if not served:
            raise OSError('the daemon never served the domain')
        ram = served.group(1)
        for k in range(1, FAIR_ROUNDS + 1):
            if k == FAIR_ROUNDS // 2 + 1:
                hostile = lv.define('hostile', 256, plan='libvirt-hostile')
                hostile.start()
                if not libvirt_check.wait_for(lambda: hostile.said('mark: hostile'), 300):
                    raise OSError('the hostile domain never began')
            if not libvirt_check.wait_for(lambda: dom.tap().count('mark: allocated\n') >= k,
                                          300, step=0.005):
                raise OSError('round %d never allocated' % k)
            # The guest's "freed" mark comes over a serial port, after the
            # frees: the daemon may be done before it arrives.  The host's
            # own view times it: from the first MiB gone to the last.
            before = held_now(ram)
            start = libvirt_check.wait_for(
                lambda: held_now(ram) <= before - FAIR_START_MIB and time.monotonic(), 300,
                step=0.0005)
            end = start and libvirt_check.wait_for(
                lambda: held_now(ram) <= before - FAIR_GIVEN_BACK_MIB and time.monotonic(), 300,
                step=0.0005)
            times.append((end - start) * 1000 if end else None)
            libvirt_check.wait_for(lambda: dom.said('mark: host may look', k), 300)
            dom.tell('looked-%d' % k)
    except (OSError, subprocess.SubprocessError) as e:
        return ['## One daemon, two domains', '', 'The run failed: %s.' % e, '']
    finally:
        lv.stop()
    alone, beside = times[:FAIR_ROUNDS // 2], times[FAIR_ROUNDS // 2:]
    med = [statistics.median(numbers(t)) if numbers(t) else None for t in (alone, beside)]
    return ['## One daemon, two domains: fairness',
            '',
            'One `pagehintd host` under Debian\'s libvirtd (the libvirt stage\'s private setup, '
            'TCG, the %s kernel): a 256 MiB domain frees 128 MiB %d times; each row is the '
            'time from the first MiB of it gone from the RAM file until %d MiB are, sampled '
            'every 0.5 ms (the guest\'s own "freed" mark comes later, over a serial port), in '
            'the first '
            'rounds with the domain alone, in the last beside a hostile 256 MiB domain that '
            'names every chunk of its table and writes junk into it all the time '
            '(guest/tests/tablejunk). The goal: beside the hostile domain within 2x of alone.'
            % (variant, FAIR_ROUNDS, FAIR_GIVEN_BACK_MIB),
            '',
            '| domain | give-back (ms), median [range] |',
            '|---|---|',
            '| alone | %s |' % fmt(alone),
            '| beside a hostile domain | %s |' % fmt(beside),
            '| beside / alone | %s |' % ('%.2f' % (med[1] / med[0]) if all(med) else '-'),
            '']


def mapped_mix(variant):
    """One boot of guest/plans/bench-mapped: the cache, mapped and volatile
    KiB it reports, and what the host holds when it has."""
    guest = vm.Guest('bench-mapped', plan='bench-mapped', variant=variant, mem_mib=1024,
                     timeout=900, disks_dir=BENCH_DISKS, daemon_args=['--target-mib', '0'])
    held = None
    try:
        guest.start()
        while guest.proc.poll() is None and held is None:
            if 'mark: mix-end' in guest.read('tap.log'):
                held = guest.resident_mib()
            time.sleep(SAMPLE_S)
        result = guest.wait()
    finally:
        guest.cleanup()
    m = re.search(r'^mark: mapped-mix cache-kib (\d+) mapped-kib (\d+) volatile-kib (\d+)$',
                  result.tap, re.M)
    if not m or 'not ok' in result.tap:
        return None
    cache, mapped, vol = map(int, m.groups())
    return dict(cache=cache / 1024, mapped=mapped / 1024, volatile=vol / 1024, held=held,
                accel=guest.accel_used)


def s390_section(variant, boots):
    """Markdown lines: the volatile share of a page cache with mapped files,
    on s390 (ESSA, emulated by the project's QEMU) and on x86."""
    print('bench: mapped page cache, x86 and s390', flush=True)
    runs = {name: [] for name in ('x86_64, %s kernel' % variant, 's390x, s390 kernel (ESSA)')}
    for _ in range(boots):
        for name, kernel in zip(runs, (variant, 's390')):
            runs[name].append(mapped_mix(kernel))
    lines = ['## Mapped page cache: s390 against x86',
             '',
             '%d boots each, interleaved, medians with their range (1 GiB, TCG, pagehintd '
             'with the aged policy and target 0, so that '
             'the x86 guest\'s scanner works as the s390 one, which cannot hear what the host '
             'wants, always does) of '
             '`guest/plans/bench-mapped`: a program run from the data disk keeps file7 and '
             'file8 mapped, the sources are grepped and file0-6 read; 20 s later the guest '
             'reports its page cache, the mapped part of it and the volatile part, and the '
             'host\'s hold on guest RAM is read. The s390 guest sets its states with ESSA, '
             'which the project\'s QEMU keeps in the same table (qemu/patches); its kernel '
             'is kernel/config/s390.config, one vCPU.',
             '',
             '| guest | cache (MiB) | mapped (MiB) | volatile (MiB) | volatile share | '
             'host holds (MiB) |',
             '|---|---|---|---|---|---|']
    for name, rs in runs.items():
        ok = [r for r in rs if r]
        if not ok:
            lines.append('| %s | every boot failed | | | | |' % name)
            continue

        def col(key):
            return fmt([r[key] for r in ok])
        lines.append('| %s%s | %s | %s | %s | %s | %s |' % (
            name, ' (%d of %d boots failed)' % (len(rs) - len(ok), len(rs))
            if len(ok) < len(rs) else '', col('cache'), col('mapped'), col('volatile'),
            fmt([100.0 * r['volatile'] / r['cache'] if r['cache'] else 0 for r in ok],
                '%.0f%%'), col('held')))
    return lines + ['']


def section(key, make, **params):
    """A section's lines, kept per commit unless a boot in it failed."""
    return measured.once('section/' + key, make,
                         worked=lambda lines: not any(re.search(r'\bfailed\b', line)
                                                      for line in lines), **params)


def main():
    variant = os.environ.get('VARIANT', 'release')
    boots = int(os.environ.get('BENCH_BOOTS', '3'))
    if sys.argv[1:] == ['s390']:
        make_disks()
        print('\n'.join(s390_section(variant, boots)))
        return 0
    if sys.argv[1:] == ['density']:
        return density.main()
    if sys.argv[1:] == ['paired']:
        make_disks()
        print('\n'.join(paired_section(variant)))
        return 0
    if sys.argv[1:] == ['libvirt']:
        print('\n'.join(libvirt_section(variant)))
        return 0
    if sys.argv[1:] == ['idle']:
        print('\n'.join(idle_section()))
        return 0
    if sys.argv[1:] == ['idle-guest']:
        make_disks()
        print('\n'.join(idle_guest_section(variant)))
        return 0
    mem_mib = 1024
    make_disks()
    at = measured.commit()
    # the longest part first: what it finds is what the rest is worth waiting for
    density_lines = density.section(os.path.join(vm.TOP, 'docs'))
    runs = {name: [] for name, _ in SETUPS}
    for i in range(boots):
        for name, opts in SETUPS:
            print('bench: boot %d of %d: %s' % (i + 1, boots, name), flush=True)
            runs[name].append(measured.once(
                'setups/%s/boot=%d' % (name, i + 1),
                lambda: measure(name, opts, variant, mem_mib), worked=lambda r: r['ok'],
                variant=variant, mem=mem_mib))

    def col(name, key):
        return [r[key] for r in runs[name]]

    def failed(name):
        bad = sum(not r['ok'] for r in runs[name])
        return ' (guest failed in %d boots)' % bad if bad else ''

    accel = runs[BASE][0]['accel'].upper()
    lines = [
        '# Benchmark: host-resident guest memory',
        '',
        'Generated by `make bench` (tools/bench.py) at commit %s, finished %s (each boot '
        'and section is kept per commit, so a bench that was stopped went on where it '
        'stopped: every number here is of that commit). The first sections: a %d MiB %s '
        'guest (%s kernel), the '
        'same kernel for every setup, %d boots per setup, interleaved. Each cell is the median '
        'of the boots with their range in brackets. "Host holds" is the allocated size of the '
        'guest RAM file, sampled every %.1f s. "pagehint, default" is pagehintd with no '
        'options: the aged policy (an unused frame goes back once it has stayed unused for '
        '2 s) and no target (volatile frames are kept, and the guest is told that the host '
        'wants no memory, so it makes none volatile). "Target 0" gives back every volatile '
        'frame too, either at once (`--policy immediate`) or oldest first after 2 s (`--policy '
        'aged`). "pagehint, no daemon" attaches the guest to '
        'its table with no pagehintd running: it pays the unused and stable transitions of '
        'every free and allocation and has nothing given back, and as no host asks for memory '
        'its scanner makes no cache volatile: its cost rows are what hinting costs a guest '
        'whose host wants nothing.'
        % (at, time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()), mem_mib, accel, variant,
           boots, SAMPLE_S),
        '',
        'Host-resident guest memory over the first boot of each setup (the plan: settle, '
        'write 400 MiB to tmpfs and delete it, read 300 MiB of files, grep, the cost '
        'measurements):',
        '',
        '![host-resident memory over time](%s)' % os.path.basename(PLOT),
        '',
        '## Free memory: write 400 MiB to tmpfs, delete it, idle 10 s',
        '',
        '"Given back within": from the guest\'s "deleted" mark to the first sample within 5% '
        'of the final size; "none" when the most the host held since the writing (or the read) '
        'began was less than 16 MiB above the final size, "<0.1" when it had given it back by '
        'the first sample.',
        '',
        '| setup | host holds after boot (MiB) | after writing 400 MiB | '
        '10 s after deleting it | given back within (s) |',
        '|---|---|---|---|---|']
    for name, _ in SETUPS:
        lines.append('| %s%s | %s | %s | %s | %s |' % (
            name, failed(name), fmt(col(name, 'boot')), fmt(col(name, 'written')),
            fmt(col(name, 'final')), fmt_within(col(name, 'given_back'))))
    lines += [
        '',
        '## Clean page cache: read 300 MiB of files, idle 10 s',
        '',
        'The goal: the host holds at most the guest\'s non-cache working set plus 10%%. '
        'The guest\'s own count of it is MemTotal - MemFree - Cached + Shmem. MemTotal leaves '
        'out the page frames the kernel reserved at boot (the memmap, the kernel image) and '
        'the holes in its memory map; the guest lists those frames (/proc/kpageflags) and the '
        'bench measures how much of them the host holds, so the working set is both together. '
        'The host had no swap space (%s), so no row wrote to host swap.' % host_swap(),
        '',
        '| setup | host holds after the read (MiB) | 10 s later | given back within (s) | '
        'non-cache working set in MemTotal (MiB) | reserved frames the host holds (MiB) | '
        '10 s later / working set |',
        '|---|---|---|---|---|---|---|']
    for name, _ in SETUPS:
        share = [r['cache'] / (r['noncache'] + r['reserved'])
                 if r['noncache'] + r['reserved'] > 0 else None for r in runs[name]]
        lines.append('| %s | %s | %s | %s | %s | %s | %s |' % (
            name, fmt(col(name, 'read')), fmt(col(name, 'cache')),
            fmt_within(col(name, 'cache_back')), fmt(col(name, 'noncache')),
            fmt(col(name, 'reserved')), fmt(share, '%.2f')))
    lines += [
        '',
        '## What it costs the guest',
        '',
        'Page cycle: allocate and free one page (two state transitions with hinting), mean '
        'over 64 MiB x 8; "per transition" is half its difference from no hinting. page_fault1 '
        '(will-it-scale\'s): two threads, one per vCPU, each maps, touches and unmaps 128 MiB, '
        '4 times; the mean time per page and thread. Cached '
        'read, hot: a 16 MiB cached file read 41 times back to back, median per round. After '
        'idle: 8 rounds 1.5 s apart, so that the scanner makes the file volatile again before '
        'each. "Frames read again" counts the frames that reads found dropped by the host '
        '(page_states_discarded) during those rounds: where it is not 0 the reads went to '
        'disk, and the row measures that, not a cache hit. Volatile share: after `drop_caches`, '
        '`grep -r` over %s (the kernel\'s fs/); of what that added to the page cache '
        '(Cached + Buffers: file data and file system metadata), the part that is volatile '
        '3 s later.' % os.path.relpath(SOURCE_TREE, vm.TOP),
        '',
        '| setup | page cycle (ns) | vs no hinting | per transition (ns) | page_fault1 (ns) | '
        'vs no hinting | cached read, hot (ns/MiB) | '
        'vs no hinting | frames read again | after idle (ns/MiB) | vs no hinting | '
        'frames read again | volatile share of the grep\'s cache |',
        '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    base_cycle = numbers(col(BASE, 'cycle_ns'))
    base_cycle = statistics.median(base_cycle) if base_cycle else None
    for name, _ in SETUPS:
        extra = [] if name == BASE or base_cycle is None else \
            [(c - base_cycle) / 2 if c else None for c in col(name, 'cycle_ns')]
        lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            name, fmt(col(name, 'cycle_ns')),
            fmt(ratio(runs[name], 'cycle_ns', runs[BASE]), '%.3f'), fmt(extra),
            fmt(col(name, 'fault1_ns')),
            fmt(ratio(runs[name], 'fault1_ns', runs[BASE]), '%.3f'), fmt(col(name, 'hot_ns')),
            fmt(ratio(runs[name], 'hot_ns', runs[BASE]), '%.3f'),
            fmt(col(name, 'hot_rereads')), fmt(col(name, 'read_ns')),
            fmt(ratio(runs[name], 'read_ns', runs[BASE]), '%.3f'),
            fmt(col(name, 'read_rereads')), fmt(col(name, 'grep_share'), '%.0f%%')))

    def overhead(name, key):
        r = numbers(ratio(runs[name], key, runs[BASE]))
        return '%+.1f%%' % (100 * (statistics.median(r) - 1)) if r else 'not measured'

    def noise(key):
        r = numbers(ratio(runs[BASE], key, runs[BASE]))
        return '%.1f%%' % (100 * (max(r) - min(r))) if len(r) > 1 else 'not measured'

    lines += ['', 'Against no hinting, medians. The default: page cycle %s, page_fault1 %s. A '
              'guest whose host takes nothing ("pagehint, no daemon"): page cycle %s, '
              'page_fault1 %s, cached read hot %s, after idle %s. The spread of the no-hinting '
              'boots among themselves (TCG, the host daemon and QEMU sharing two cores) was %s '
              'for the page cycle, %s for page_fault1, %s for the hot read and %s after idle; '
              'a difference smaller than that is noise. With the immediate policy the page '
              'cycle includes the host\'s work: each freed frame is punched out at once and '
              'touching it again costs a host page fault for a fresh zero page: page cycle %s, '
              'page_fault1 %s. The aged policy leaves a frame that is freed and taken again '
              'within 2 s alone: page cycle %s, page_fault1 %s.'
              % (overhead(DEFAULT, 'cycle_ns'), overhead(DEFAULT, 'fault1_ns'),
                 overhead(NO_DAEMON, 'cycle_ns'), overhead(NO_DAEMON, 'fault1_ns'),
                 overhead(NO_DAEMON, 'hot_ns'), overhead(NO_DAEMON, 'read_ns'),
                 noise('cycle_ns'), noise('fault1_ns'), noise('hot_ns'), noise('read_ns'),
                 overhead(IMMEDIATE, 'cycle_ns'), overhead(IMMEDIATE, 'fault1_ns'),
                 overhead(AGED, 'cycle_ns'), overhead(AGED, 'fault1_ns'))]
    plot.held({name: runs[name][0]['samples'] for name, _ in SETUPS}, svg=PLOT)
    lines += [''] + section('paired', lambda: paired_section(variant), variant=variant) + \
        [''] + section('idle', idle_section) + [''] + \
        section('idle-guest', lambda: idle_guest_section(variant), variant=variant) + [''] + \
        section('libvirt', lambda: libvirt_section(variant), variant=variant) + [''] + \
        section('s390', lambda: s390_section(variant, boots), variant=variant, boots=boots) + \
        [''] + density_lines
    text = '\n'.join(lines) + '\n'
    print(text)
    with open(os.path.join(vm.TOP, 'docs', 'bench.md'), 'w') as f:
        f.write(text)
    return 0 if all(r['ok'] for rs in runs.values() for r in rs) else 1


if __name__ == '__main__':
    vm.exit_on_sigterm()
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print('bench: interrupted; its guests and daemons are stopped', file=sys.stderr)
        sys.exit(130)
