#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make bench-density: how many guests one host carries, by setup.

The scaled-down shape of the published density tests, on this machine:
every QEMU in one memory cgroup with a hard limit (DENSITY_LIMIT_MIB,
4096 by default), a host swap file the benchmark makes and removes, so
that going over the limit costs visible swap I/O instead of killing a
guest; N guests of 1 GiB (one vCPU online, two possible: TCG's atomics),
the release kernel, each running guest/plans/density (random reads from
its page cache, nine in ten from a hot fifth of it, a 256 MiB burst every
8th round, 4 s pauses: two cores carry many).  The same guests and workload under each setup:

  no hinting            the guest's page states off, nothing given back
  free page reporting   virtio-balloon's, as Linux and QEMU ship it
  balloon loop          free page reporting and a MOM-like loop that
                        inflates every balloon by 5% of its guest each
                        10 s while less than 20% of the limit is free, and
                        deflates it while more than 30% is
  KSM                   the host's KSM merging the guests' anonymous RAM
                        (KSM cannot merge a shared file, so these guests'
                        RAM is QEMU's own; the host's KSM is on for this
                        setup only)
  pagehint, budget      one pagehintd host --budget-mib for all guests

Each guest has a data disk of its own, of its own random content (made
once, build/density-disks): with one disk for all, KSM would merge their
page caches, which no real host sees.

For each setup and N (DENSITY_N, "2 4 8 12"), DENSITY_RUNS times (3;
the runs interleaved, so that a drift of the host hits every setup alike,
and each cell the median of the runs): boot, let every guest read its
disk and warm up (DENSITY_WARMUP_S), then measure for
DENSITY_MEASURE_S: rounds a minute in all, the 95th percentile of a
round's time, host swap-in and swap-out, what the RAM files and the
cgroup hold, the guests' major faults and frames read again, and the CPU
of pagehintd and kswapd.  The knee is the first N where the rounds a
minute per guest fall below half of N=2's, or the p95 above twice N=2's
(the z/VM criterion).  And a second curve, VMware's balloon study's shape:
one 4 GiB guest whose cache holds a 3 GiB disk, the host taking 0 to 3 GiB
(DENSITY_ONE_TAKE_MIB) of what it holds by host swap, by a balloon, and by
pagehintd's budget, DENSITY_ONE_RUNS times (1: each run takes minutes).

A section of docs/bench.md (make bench); alone (make bench-density) it is
printed and written to build/bench-density.md.  Every point is kept per
commit (tools/measured.py).  A benchmark, not a test: nothing here judges.
"""

import errno
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import libvirt_check as lc  # noqa: E402
import measured  # noqa: E402
import vm  # noqa: E402

GUEST_MIB = 1024
VARIANT = os.environ.get('VARIANT', 'release')
LIMIT_MIB = int(os.environ.get('DENSITY_LIMIT_MIB', '4096'))
NS = tuple(int(n) for n in os.environ.get('DENSITY_N', '2 4 8 12').split())
WARMUP_S = int(os.environ.get('DENSITY_WARMUP_S', '20'))
MEASURE_S = int(os.environ.get('DENSITY_MEASURE_S', '60'))
# runs of every point, interleaved: each cell is their median
RUNS = int(os.environ.get('DENSITY_RUNS', '3'))
ALL_SETUPS = ('no hinting', 'free page reporting', 'balloon loop', 'KSM', 'pagehint, budget')
# DENSITY_SETUPS: some of them, separated by ";"
SETUPS = [n.strip() for n in os.environ.get('DENSITY_SETUPS', ';'.join(ALL_SETUPS)).split(';')]
# The pagehint budget: the limit less what QEMU holds beside the RAM files
# (its own memory, TCG's code buffer), measured at start, and of the rest
# this share kept free, as the balloon loop keeps LOOP_FREE of the limit:
# the guests' bursts come faster than any give-back
BUDGET_MARGIN = 0.20
# the second curve, VMware's balloon study's shape: one guest of ONE_MIB
# whose cache holds a disk of ONE_DATA_MIB, and the host taking memory from
# it by each of these setups (the guest's own setup in brackets)
ONE_MIB, ONE_DATA_MIB = 4096, 3072
ONE_TAKES = tuple(int(t) for t in os.environ.get('DENSITY_ONE_TAKE_MIB',
                                                 '0 1024 2048 3072').split())
# its runs of every point: one by default, each a 4 GiB guest reading 3 GiB
ONE_RUNS = int(os.environ.get('DENSITY_ONE_RUNS', '1'))
ONE_SETUPS = {'host swap': 'no hinting', 'balloon': 'free page reporting',
              'pagehint, budget': 'pagehint, budget'}
BOOT_S = 300            # for every guest to read its disk, at most
DISKS = os.path.join(vm.BUILD, 'density-disks')
DATA_MIB = 300
# the balloon loop: MOM's shape (10 s cycles), 5% steps, 20% of the limit free
LOOP_S, LOOP_STEP, LOOP_FREE, LOOP_SLACK, LOOP_MIN = 10, 0.05, 0.20, 0.30, 0.25
KSM = '/sys/kernel/mm/ksm'

DOMAIN_XML = '''<domain type='qemu'>
  <name>{name}</name>
  <memory unit='MiB'>{mem_mib}</memory>
  {backing}
  <vcpu current='1'>2</vcpu>
  <cpu mode='maximum'/>
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <kernel>{kernel}</kernel>
    <initrd>{initrd}</initrd>
    <cmdline>console=ttyS0 panic=-1 plan=density kunit.enable=0{cmdline}</cmdline>
  </os>
  <features><acpi/></features>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw' cache='none'/>
      <source file='{disk}'/>
      <target dev='vda' bus='virtio'/>
      <readonly/>
    </disk>
    <serial type='file'><source path='{dir}/console.log'/><target port='0'/></serial>
    <serial type='file'><source path='{dir}/tap.log'/><target port='1'/></serial>
    {devices}
    <controller type='usb' model='none'/>
    {balloon}
  </devices>
</domain>
'''
BACKING_FILE = """<memoryBacking><source type='file'/><access mode='shared'/></memoryBacking>"""
SHMEM = '''<shmem name='{table}'><model type='ivshmem-plain'/><size unit='M'>{mib}</size></shmem>'''
BALLOON_FPR = "<memballoon model='virtio' freePageReporting='on'/>"


def read(path):
    with open(path) as f:
        return f.read()


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)


class Cgroup:
    """One memory cgroup for every QEMU, with a hard limit: v1's
    memory.limit_in_bytes, or v2's memory.max."""

    made = 0

    def __init__(self, limit_bytes):
        self.v2 = os.path.exists('/sys/fs/cgroup/cgroup.controllers')
        root = '/sys/fs/cgroup' if self.v2 else '/sys/fs/cgroup/memory'
        Cgroup.made += 1
        self.path = os.path.join(root, 'pagehint-density-%d-%d' % (os.getpid(), Cgroup.made))
        os.mkdir(self.path)
        self.limit(limit_bytes)
        if not self.v2:
            # what QEMU touched before it moved in comes along (deprecated, still there in v1)
            try:
                write(os.path.join(self.path, 'memory.move_charge_at_immigrate'), '3')
            except OSError:
                pass

    def lower(self, limit_bytes):
        """Lower the limit to LIMIT_BYTES in steps of 128 MiB: v1 refuses
        (EBUSY) a limit that one write's reclaim does not reach."""
        step = self.usage()
        while step > limit_bytes:
            step = max(limit_bytes, step - (128 << 20))
            for attempt in range(20):
                try:
                    self.limit(step)
                    break
                except OSError as e:
                    if e.errno != errno.EBUSY or attempt == 19:
                        raise
                    time.sleep(0.5)

    def limit(self, limit_bytes):
        """A hard limit of LIMIT_BYTES (None: none).  Lowering it below what
        the cgroup holds reclaims the difference in the write."""
        if self.v2:
            write(os.path.join(self.path, 'memory.max'),
                  'max' if limit_bytes is None else str(limit_bytes))
        else:
            write(os.path.join(self.path, 'memory.limit_in_bytes'),
                  '-1' if limit_bytes is None else str(limit_bytes))

    def add(self, pid):
        write(os.path.join(self.path, 'cgroup.procs'), str(pid))

    def usage(self):
        name = 'memory.current' if self.v2 else 'memory.usage_in_bytes'
        return int(read(os.path.join(self.path, name)))

    def shmem(self):
        """Bytes of tmpfs pages in RAM charged to the cgroup: the RAM files'."""
        m = re.search(r'^shmem (\d+)$', read(os.path.join(self.path, 'memory.stat')), re.M)
        return int(m.group(1)) if m else 0

    def swapped(self):
        """Bytes of the cgroup's memory in host swap."""
        if self.v2:
            return int(read(os.path.join(self.path, 'memory.swap.current')))
        m = re.search(r'^swap (\d+)$', read(os.path.join(self.path, 'memory.stat')), re.M)
        return int(m.group(1)) if m else 0

    def remove(self):
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                # processes still in it (ending): into the parent with them
                for pid in read(os.path.join(self.path, 'cgroup.procs')).split():
                    try:
                        write(os.path.join(os.path.dirname(self.path), 'cgroup.procs'), pid)
                    except OSError:
                        pass
                time.sleep(0.2)
        print('density: cannot remove the cgroup %s: %s still in it' % (
            self.path, read(os.path.join(self.path, 'cgroup.procs')).split()), flush=True)


class SwapFile:
    """A host swap area for the benchmark's run only."""

    def __init__(self, mib):
        self.path = os.path.join(vm.BUILD, 'density.swap')
        self.on = False
        subprocess.run(['swapoff', self.path], capture_output=True)
        if os.path.exists(self.path):
            os.unlink(self.path)
        subprocess.run(['fallocate', '-l', '%dM' % mib, self.path], check=True)
        os.chmod(self.path, 0o600)
        subprocess.run(['mkswap', '-q', self.path], check=True, capture_output=True)
        subprocess.run(['swapon', self.path], check=True)
        self.on = True

    def remove(self):
        if self.on and subprocess.run(['swapoff', self.path]).returncode:
            # unlinked, it would stay in use and out of sight
            print('density: swapoff %s failed: left in place' % self.path, flush=True)
            return
        self.on = False
        if os.path.exists(self.path):
            os.unlink(self.path)


def vmstat(name):
    m = re.search(r'^%s (\d+)$' % name, read('/proc/vmstat'), re.M)
    return int(m.group(1)) if m else 0


def cpu_s(pid):
    """CPU seconds process PID has used; None when it is gone."""
    try:
        fields = read('/proc/%d/stat' % pid).rsplit(')', 1)[1].split()
    except (OSError, TypeError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def kswapd_pids():
    pids = []
    for p in os.listdir('/proc'):
        try:
            if p.isdigit() and read('/proc/%s/comm' % p).startswith('kswapd'):
                pids.append(int(p))
        except OSError:
            pass
    return pids


ROUND = re.compile(r'^mark: round (\d+) ([\d.]+) (\d+) (\d+)$', re.M)


def rounds(dom):
    """The guest's rounds so far: [(n, ms, discarded, majflt)]."""
    return [(int(n), float(ms), int(d), int(m)) for n, ms, d, m in ROUND.findall(dom.tap())]


def table_mib(mem_mib):
    """The ivshmem region a guest of MEM_MIB needs: the table pagehintd
    says it needs, in a power of two of MiB."""
    need = int(subprocess.run([vm.PAGEHINTD, 'table-size', '--mem-mib', str(mem_mib)],
                              check=True, capture_output=True, text=True).stdout.split()[0])
    mib = 1
    while mib << 20 < need:
        mib *= 2
    return mib


def define(lv, name, setup, mem_mib=GUEST_MIB, disk=None):
    d = lv.path('guests', name)
    os.makedirs(d)
    hint = setup == 'pagehint, budget'
    table = 'pagehint-lv%d-%s' % (os.getpid(), name)
    xml = DOMAIN_XML.format(
        name=name, mem_mib=mem_mib, dir=d, disk=disk or os.path.join(DISKS, name, 'data.img'),
        backing='' if setup == 'KSM' else BACKING_FILE,
        kernel=vm.kernel_image(lv.variant), initrd=vm.initramfs(lv.variant),
        cmdline='' if hint else ' page_states=off',
        devices=SHMEM.format(table=table, mib=table_mib(mem_mib)) if hint else '',
        balloon=BALLOON_FPR if setup in ('free page reporting', 'balloon loop')
        else "<memballoon model='none'/>")
    write(os.path.join(d, 'domain.xml'), xml)
    lv.virsh('define', os.path.join(d, 'domain.xml'))
    return lc.Domain(lv, name, d, mem_mib, 'density', table if hint else None)


def make_disk(name, data_mib):
    """A data disk of DATA_MIB MiB of files of its own random content, made
    once (guest/mkdisks.sh): build/density-disks/NAME/data.img."""
    d = os.path.join(DISKS, name)
    if os.path.exists(os.path.join(d, 'done')):
        return os.path.join(d, 'data.img')
    print('density: making the data disk %s' % name, flush=True)
    subprocess.run([os.path.join(vm.TOP, 'guest', 'mkdisks.sh')], check=True,
                   stdout=subprocess.DEVNULL,
                   env=dict(os.environ, DISKS_DIR=d, DATA_MIB=str(data_mib), SWAP_MIB='1'))
    for f in ('data.erofs', 'swap.img'):
        os.unlink(os.path.join(d, f))
    write(os.path.join(d, 'done'), '')
    return os.path.join(d, 'data.img')


def make_disks(n):
    """A data disk for each of N guests, each of its own random content."""
    for i in range(n):
        make_disk('d%02d' % i, DATA_MIB)


class BalloonLoop(threading.Thread):
    """A MOM-like policy: every LOOP_S seconds, while less than LOOP_FREE
    of the limit is free, every balloon takes LOOP_STEP more of its guest
    (down to LOOP_MIN of it); while more than LOOP_SLACK is, it gives that
    much back."""

    def __init__(self, lv, doms, cg, limit):
        super().__init__(daemon=True)
        self.lv, self.doms, self.cg, self.limit = lv, doms, cg, limit
        self.stop = threading.Event()
        self.mib = {d.name: GUEST_MIB for d in doms}
        self.steps = 0

    def run(self):
        step = int(GUEST_MIB * LOOP_STEP)
        while not self.stop.wait(LOOP_S):
            free = self.limit - self.cg.usage()
            for d in self.doms:
                cur = self.mib[d.name]
                if free < self.limit * LOOP_FREE:
                    new = max(cur - step, int(GUEST_MIB * LOOP_MIN))
                elif free > self.limit * LOOP_SLACK:
                    new = min(cur + step, GUEST_MIB)
                else:
                    new = cur
                if new != cur:
                    self.lv.virsh('setmem', d.name, str(new << 10), '--live', check=False)
                    self.mib[d.name] = new
                    self.steps += 1


class Ksm:
    """The host's KSM on, at a pace a 2-core host can afford, for one
    setup; what it was is put back after."""

    SETTINGS = {'pages_to_scan': '1000', 'sleep_millisecs': '20', 'run': '1'}

    def __init__(self):
        self.saved = {k: read(os.path.join(KSM, k)).strip() for k in self.SETTINGS}
        for k, v in self.SETTINGS.items():
            write(os.path.join(KSM, k), v)

    @staticmethod
    def shared_mib():
        return int(read(os.path.join(KSM, 'pages_sharing'))) * 4096 / (1 << 20)

    def restore(self):
        # run=2 would unmerge everything: the guests are gone by now, 0 is enough
        for k in ('run', 'pages_to_scan', 'sleep_millisecs'):
            write(os.path.join(KSM, k), self.saved[k] if k != 'run' or
                  self.saved[k] != '2' else '0')


def ram_held(lv):
    return sum(os.stat(p).st_blocks * 512
               for p in glob.glob(lv.path('ram', 'libvirt', 'qemu', '*', 'pc.ram')))


def boot(lv, doms, cg):
    """Start DOMS, each QEMU in CG before its guest runs, and wait until
    every guest has read its disk into its cache."""
    for dom in doms:
        dom.started = time.monotonic()
        lv.virsh('start', '--paused', dom.name)
        pid = int(read(lv.path('run', 'qemu', dom.name + '.pid')).strip())
        cg.add(pid)
        lv.virsh('resume', dom.name)
    for dom in doms:
        if not lc.wait_for(lambda: dom.said('mark: ready') or dom.state() != 'running',
                           BOOT_S + 30 * len(doms), step=1) or not dom.said('mark: ready'):
            raise OSError('%s never read its disk (%s); see %s' % (
                dom.name, dom.state(), os.path.join(dom.run_dir, 'console.log')))


def window(lv, doms, cg, ksm=None, loop=None):
    """MEASURE_S of DOMS at work: what the guests did and what it cost the
    host (a dict of numbers, None for what this setup has none of)."""
    daemon_pid = lv.daemon.pid if lv.daemon else None
    kswapd = kswapd_pids()
    start = dict(t=time.monotonic(), rounds={d.name: rounds(d) for d in doms},
                 pswpin=vmstat('pswpin'), pswpout=vmstat('pswpout'),
                 daemon=cpu_s(daemon_pid) if daemon_pid else None,
                 kswapd=sum(cpu_s(p) or 0 for p in kswapd))
    held, usage, merged = [], [], []
    while time.monotonic() - start['t'] < MEASURE_S:
        held.append(ram_held(lv))
        usage.append(cg.usage())
        if ksm:
            merged.append(ksm.shared_mib())
        time.sleep(1)
    t = time.monotonic() - start['t']
    end = {d.name: rounds(d) for d in doms}
    times, done, discarded, majflt = [], 0, 0, 0
    for dom in doms:
        before, after = start['rounds'][dom.name], end[dom.name]
        last = before[-1] if before else (0, 0, 0, 0)
        new = [r for r in after if r[0] > last[0]]
        done += len(new)
        times += [r[1] for r in new]
        if new:
            discarded += new[-1][2] - last[2]
            majflt += new[-1][3] - last[3]
    daemon_cpu = cpu_s(daemon_pid) if daemon_pid else None
    gone = [d.name for d in doms if d.state() != 'running']
    if gone or (lv.daemon and lv.daemon.poll() is not None):
        # a guest the limit's OOM killer took, or a daemon that died: no point
        raise OSError('during the window: %s' % (
            'domains %s stopped' % ', '.join(gone) if gone else
            'pagehintd ended with status %s' % lv.daemon.returncode))
    return dict(
        ok=True, n=len(doms),
        rounds_min=done * 60 / t,
        per_guest=done * 60 / t / len(doms),
        p95=statistics.quantiles(times, n=20, method='inclusive')[-1]
        if len(times) >= 2 else None,
        median=statistics.median(times) if times else None,
        swapin_mib=(vmstat('pswpin') - start['pswpin']) * 4096 / (1 << 20),
        swapout_mib=(vmstat('pswpout') - start['pswpout']) * 4096 / (1 << 20),
        held_mib=statistics.median(held) / (1 << 20) if not ksm else None,
        ksm_mib=statistics.median(merged) if merged else None,
        balloon_steps=loop.steps if loop else None,
        cgroup_mib=statistics.median(usage) / (1 << 20),
        cgroup_swap_mib=cg.swapped() / (1 << 20),
        discarded=discarded, majflt=majflt,
        daemon_cpu=(daemon_cpu - start['daemon']) / t * 100
        if daemon_cpu is not None and start['daemon'] is not None else None,
        kswapd_cpu=(sum(cpu_s(p) or 0 for p in kswapd) - start['kswapd']) / t * 100)


def run_point(setup, n, cg_limit):
    """One setup with N guests: what the measurement window saw."""
    print('density: %s, %d guests' % (setup, n), flush=True)
    lv = lc.Libvirt(VARIANT)
    cg = loop = ksm = None
    try:
        if setup == 'KSM':
            ksm = Ksm()
        lv.start()
        cg = Cgroup(cg_limit)
        doms = [define(lv, 'd%02d' % i, setup) for i in range(n)]
        boot(lv, doms, cg)
        budget_mib = None
        if setup == 'pagehint, budget':
            # what QEMU holds beside the RAM files stays; the budget is the
            # rest.  In RAM: the RAM files' pages in RAM are the cgroup's
            # shmem (the files' blocks would count swapped pages too)
            overhead = cg.usage() - cg.shmem()
            budget_mib = int((cg_limit - max(overhead, 0)) * (1 - BUDGET_MARGIN)) >> 20
            lv.start_daemon('--budget-mib', str(budget_mib))
        if setup == 'balloon loop':
            loop = BalloonLoop(lv, doms, cg, cg_limit)
            loop.start()
        time.sleep(WARMUP_S)
        return dict(window(lv, doms, cg, ksm, loop), budget_mib=budget_mib)
    except (OSError, subprocess.SubprocessError) as e:
        print('density: %s, %d guests: %s' % (setup, n, e), flush=True)
        return dict(ok=False, n=n, why=str(e))
    finally:
        try:
            if loop:
                loop.stop.set()
                loop.join()
            try:
                lv.stop()
            finally:
                if cg:
                    cg.remove()
        finally:
            # KSM scanning on would weigh on every later point
            if ksm:
                ksm.restore()


def run_one(setup, take_mib):
    """The second curve, VMware's shape: one ONE_MIB guest whose cache
    holds its ONE_DATA_MIB disk; once it has warmed up, the host takes
    TAKE_MIB of what the guest holds, by SETUP, and the guest works on."""
    print('density: one guest, %s takes %d MiB' % (setup, take_mib), flush=True)
    lv = lc.Libvirt(VARIANT)
    cg = None
    try:
        lv.start()
        cg = Cgroup(None)
        dom = define(lv, 'one', ONE_SETUPS[setup], mem_mib=ONE_MIB,
                     disk=make_disk('one', ONE_DATA_MIB))
        boot(lv, [dom], cg)
        time.sleep(WARMUP_S)
        held, usage = ram_held(lv), cg.usage()
        if take_mib and setup == 'host swap':
            # reclaim to below the new limit happens in these writes
            cg.lower(usage - (take_mib << 20))
        elif take_mib and setup == 'balloon':
            # what the guest never touched the host never held: the balloon
            # takes that and TAKE_MIB of the rest
            lv.virsh('setmem', dom.name, str(((held >> 20) - take_mib) << 10), '--live')
        elif setup == 'pagehint, budget':
            lv.start_daemon('--budget-mib', str((held >> 20) - take_mib))
        time.sleep(WARMUP_S)
        return dict(window(lv, [dom], cg), take_mib=take_mib, held_before_mib=held >> 20,
                    cgroup_before_mib=usage >> 20)
    except (OSError, subprocess.SubprocessError) as e:
        print('density: one guest, %s takes %d MiB: %s' % (setup, take_mib, e), flush=True)
        return dict(ok=False, n=1, take_mib=take_mib, why=str(e))
    finally:
        try:
            lv.stop()
        finally:
            if cg:
                cg.remove()


def median_row(points, n):
    """One point's runs as one row: the median of each measure over the
    runs that worked and have it, and the range of the rounds a minute."""
    ok = [p for p in points if p['ok']]
    if not ok:
        return dict(ok=False, n=n, why='; '.join(p['why'] for p in points) or 'not run')
    row = dict(ok=True, n=n, runs=len(ok), failed=len(points) - len(ok),
               rounds_range=(min(p['rounds_min'] for p in ok),
                             max(p['rounds_min'] for p in ok)))
    for key in {k for p in ok for k in p} - {'ok', 'n', 'why'}:
        values = [p[key] for p in ok if isinstance(p.get(key), (int, float)) and
                  not isinstance(p.get(key), bool)]
        row[key] = statistics.median(values) if values else None
    for key in ('budget_mib', 'ksm_mib', 'balloon_steps', 'held_mib', 'daemon_cpu', 'p95',
                'median'):
        row.setdefault(key, None)
    return row


def knee(rows):
    """The first N whose rounds a minute per guest are below half of the
    smallest N's, or whose p95 is above twice its (or that finished fewer
    than two rounds in a window): None if none."""
    ok = [r for r in rows if r['ok']]
    if not ok or not ok[0]['p95']:
        return None
    base = ok[0]
    for r in ok[1:]:
        if r['p95'] is None or r['per_guest'] < base['per_guest'] / 2 or \
                r['p95'] > 2 * base['p95']:
            return r['n']
    return None


def fmt(v, spec='%.0f'):
    return '-' if v is None else spec % v


def gnuplot(script):
    subprocess.run(['gnuplot'], input='\n'.join(script), text=True, check=True,
                   capture_output=True)


def plot(runs, svg):
    """Throughput and host-resident memory against N, every setup."""
    with tempfile.TemporaryDirectory(prefix='pagehint-density-') as d:
        plots = {'rounds': [], 'held': []}
        for i, (setup, rows) in enumerate(runs.items()):
            data = os.path.join(d, '%d.dat' % i)
            with open(data, 'w') as f:
                for r in rows:
                    if r['ok']:
                        f.write('%d %.2f %.1f\n' % (r['n'], r['rounds_min'],
                                                    r['cgroup_mib'] + r['cgroup_swap_mib']))
            title = setup.replace("'", '')
            plots['rounds'].append("'%s' using 1:2 with linespoints lw 2 title '%s'"
                                   % (data, title))
            plots['held'].append("'%s' using 1:3 with linespoints lw 2 title '%s'"
                                 % (data, title))
        gnuplot([
            "set terminal svg size 960,800 dynamic font 'sans,12'", "set output '%s'" % svg,
            'set multiplot layout 2,1', 'set grid', 'set key outside right top',
            "set xlabel 'guests (1 GiB each)'", 'set yrange [0:*]',
            "set title 'throughput: rounds a minute, all guests (limit %d MiB)'" % LIMIT_MIB,
            "set ylabel 'rounds / minute'", 'plot ' + ', '.join(plots['rounds']),
            "set title 'what the guests cost the host: their cgroup in RAM + in swap'",
            "set ylabel 'MiB'", 'plot ' + ', '.join(plots['held']), 'unset multiplot'])


def plot_one(one, svg):
    """The single guest's round times against what the host took, by
    setup (its rounds a minute hardly move: the pauses between rounds are
    most of a round's period)."""
    with tempfile.TemporaryDirectory(prefix='pagehint-density-') as d:
        plots = {'median': [], 'p95': []}
        for i, (setup, rows) in enumerate(one.items()):
            data = os.path.join(d, '%d.dat' % i)
            with open(data, 'w') as f:
                for r in rows:
                    if r['ok'] and r['p95']:
                        f.write('%d %.1f %.1f\n' % (r['take_mib'], r['median'], r['p95']))
            for col, key in ((2, 'median'), (3, 'p95')):
                plots[key].append("'%s' using 1:%d with linespoints lw 2 title '%s'"
                                  % (data, col, setup))
        gnuplot([
            "set terminal svg size 960,700 dynamic font 'sans,12'", "set output '%s'" % svg,
            'set multiplot layout 2,1', 'set grid', 'set key outside right top',
            'set yrange [0:*]', "set xlabel 'MiB the host takes of what the guest holds'",
            "set ylabel 'ms'",
            "set title 'one %d MiB guest, its cache holding %d MiB: median round'"
            % (ONE_MIB, ONE_DATA_MIB), 'plot ' + ', '.join(plots['median']),
            "set title 'p95 round'", 'plot ' + ', '.join(plots['p95']), 'unset multiplot'])


COLUMNS = ('| N | rounds/min | per guest | p95 round (ms) | median round (ms) | swap in (MiB) | '
           'swap out (MiB) | RAM files hold (MiB) | cgroup (MiB) | in swap (MiB) | '
           'major faults | frames read again | pagehintd CPU | kswapd CPU | budget (MiB) | '
           'KSM merged (MiB) | balloon steps |')


def row(r, first):
    """A table row of a median row R; FIRST is its first column."""
    if not r['ok']:
        return '| %s | failed: %s |' % (first, r['why'])
    return ('| %s%s | %s [%.1f-%.1f] | %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %.0f | '
            '%s | %s | %s | %s | %s |' % (
                first, ' (%d of %d runs failed)' % (r['failed'], r['failed'] + r['runs'])
                if r['failed'] else '',
                fmt(r['rounds_min'], '%.1f'), r['rounds_range'][0], r['rounds_range'][1],
                fmt(r['per_guest'], '%.2f'), fmt(r['p95']), fmt(r['median']),
                fmt(r['swapin_mib']), fmt(r['swapout_mib']), fmt(r['held_mib']),
                fmt(r['cgroup_mib']), fmt(r['cgroup_swap_mib']), r['majflt'], r['discarded'],
                fmt(r['daemon_cpu'], '%.1f%%'), fmt(r['kswapd_cpu'], '%.1f%%'),
                fmt(r['budget_mib']), fmt(r['ksm_mib']), fmt(r['balloon_steps'])))


def sweep():
    """Every point of the table and of the second curve, RUNS times,
    interleaved; each kept per commit (measured.once), so that a sweep
    that was stopped goes on where it stopped.  The swap file is there
    while anything is measured."""
    points = {(s, n): [] for s in SETUPS for n in NS}
    one = {(s, t): [] for s in ONE_SETUPS for t in ONE_TAKES}
    swap = []

    def measuring(fn):
        if not swap:
            swap.append(SwapFile(max(max(NS) * GUEST_MIB, ONE_MIB) + 1024))
        return fn()

    # what a point depends on beyond the commit, its setup and its N
    params = dict(variant=VARIANT, limit_mib=LIMIT_MIB, warmup_s=WARMUP_S, measure_s=MEASURE_S)
    try:
        for i in range(max(RUNS, ONE_RUNS)):
            for n in NS if i < RUNS else ():
                for setup in SETUPS:
                    points[setup, n].append(measured.once(
                        'density/%s/N=%d/run=%d' % (setup, n, i + 1),
                        lambda: measuring(lambda: run_point(setup, n, LIMIT_MIB << 20)),
                        worked=lambda r: r['ok'], **params))
            for take in ONE_TAKES if i < ONE_RUNS else ():
                for setup in ONE_SETUPS:
                    one[setup, take].append(measured.once(
                        'density-one/%s/take=%d/run=%d' % (setup, take, i + 1),
                        lambda: measuring(lambda: run_one(setup, take)),
                        worked=lambda r: r['ok'], **params))
    finally:
        for s in swap:
            s.remove()
    return ({s: [median_row(points[s, n], n) for n in NS] for s in SETUPS},
            {s: [dict(median_row(one[s, t], 1), take_mib=t) for t in ONE_TAKES]
             for s in ONE_SETUPS} if ONE_RUNS else {})


def section(svg_dir):
    """The density section of docs/bench.md: markdown lines, its plots in
    SVG_DIR."""
    unknown = [s for s in SETUPS if s not in ALL_SETUPS]
    if unknown:
        raise SystemExit('density: no setup %s (there are: %s)'
                         % (', '.join(unknown), '; '.join(ALL_SETUPS)))
    make_disks(max(NS))
    if ONE_TAKES:
        make_disk('one', ONE_DATA_MIB)
    runs, one = sweep()
    svg, svg_one = (os.path.join(svg_dir, n) for n in ('bench-density.svg',
                                                        'bench-density-one.svg'))
    plot(runs, svg)
    lines = [
        '## Density: how many guests one host carries',
        '',
        'On a %d-core host under TCG, every QEMU in one memory cgroup with a hard limit of '
        '%d MiB and a host swap file, so that going over it costs host swap I/O; N guests '
        'of %d MiB (the %s kernel, one vCPU online), each with a data disk of its own random '
        'content, running guest/plans/density: random 64 KiB reads of 32 MiB from the %d '
        'MiB it cached, nine in ten from the first fifth of each file (a hot part and a '
        'cold rest), every 8th round a burst of 256 MiB written and freed, 4 s pauses '
        'between rounds. %d s of warm-up after every guest read its disk, then %d s '
        'measured. "balloon loop" is free page reporting with a MOM-like loop (every %d s, '
        'each balloon %d%% of its guest further while less than %d%% of the limit is free, '
        'back while more than %d%% is); "KSM" the host\'s KSM on anonymous guest RAM; '
        '"pagehint, budget" one `pagehintd host --budget-mib` for all guests, the budget '
        'the limit less what QEMU held beside the RAM files at start (the cgroup\'s memory '
        'less its tmpfs pages), less %d%% (the bursts come faster than any give-back; the '
        'balloon loop keeps as much free). %d runs '
        'of every point, interleaved; each cell is their median, the rounds a minute with '
        'their range in brackets. "RAM files hold" counts their pages in host swap too; '
        '"cgroup" is what the guests\' QEMUs hold of host RAM, "in swap" what they have in '
        'host swap. The knee is the first N whose rounds a minute per guest fall below '
        'half of N=%d\'s, or whose p95 round is above twice its (the z/VM criterion).'
        % (os.cpu_count(), LIMIT_MIB, GUEST_MIB, VARIANT, DATA_MIB, WARMUP_S, MEASURE_S,
           LOOP_S, LOOP_STEP * 100, LOOP_FREE * 100, LOOP_SLACK * 100, BUDGET_MARGIN * 100,
           RUNS, NS[0]),
        '',
        '![throughput and host-resident memory against N](%s)' % os.path.basename(svg),
        '',
        '| setup | knee | rounds/min at N=%d | per guest at N=%d, of N=%d\'s |'
        % (NS[-1], NS[-1], NS[0]),
        '|---|---|---|---|']
    for setup, rows in runs.items():
        k, first, last = knee(rows), rows[0], rows[-1]
        lines.append('| %s | %s | %s | %s |' % (
            setup, 'N = %d' % k if k else 'not reached by N=%d' % NS[-1],
            fmt(last.get('rounds_min'), '%.1f'),
            '%.0f%%' % (100 * last['per_guest'] / first['per_guest'])
            if first['ok'] and last['ok'] and first['per_guest'] else '-'))
    lines.append('')
    for setup, rows in runs.items():
        lines += ['### %s' % setup, '', COLUMNS, '|---' * 17 + '|']
        lines += [row(r, '%d' % r['n']) for r in rows]
        lines.append('')
    if not ONE_TAKES or not ONE_RUNS:
        return lines
    plot_one(one, svg_one)
    lines += [
        '### One guest, and the host taking its memory',
        '',
        'The shape of VMware\'s balloon study: one guest of %d MiB (the same workload, its '
        'cache holding a disk of %d MiB), no memory limit; after the warm-up the host takes '
        'what the first column says of what the guest holds, and after %d s more the window '
        'is measured. "host swap": the guest without hinting, its cgroup\'s limit lowered '
        'by that much (the host swaps out what it picks). "balloon": free page reporting, '
        'the balloon inflated to what the guest never touched plus that much (the guest '
        'picks what to give up, its own reclaim). "pagehint, budget": `pagehintd host '
        '--budget-mib` of what the guest holds less that much (the guest\'s volatile '
        'clean cache goes first). %s.'
        % (ONE_MIB, ONE_DATA_MIB, WARMUP_S, '%d runs each, medians' % ONE_RUNS
           if ONE_RUNS > 1 else 'One run each (DENSITY_ONE_RUNS): the spread of this '
           'workload between runs is in the table above'),
        '',
        '![one guest: round times against what the host takes](%s)'
        % os.path.basename(svg_one),
        '',
        COLUMNS.replace('| N |', '| setup, MiB taken |'), '|---' * 17 + '|']
    for setup, rows in one.items():
        lines += [row(r, '%s, %d' % (setup, r['take_mib'])) for r in rows]
    return lines + ['']


def main():
    """make bench-density: the density section alone, printed and written
    to build/bench-density.md (docs/bench.md is all of make bench)."""
    if os.geteuid():
        print('density: needs root (a memory cgroup, a swap file, libvirtd)', file=sys.stderr)
        return 2
    text = '\n'.join(['# Density, at commit %s' % measured.commit(), ''] +
                     section(vm.BUILD)) + '\n'
    print(text)
    write(os.path.join(vm.BUILD, 'bench-density.md'), text)
    return 0


if __name__ == '__main__':
    vm.exit_on_sigterm()
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print('density: interrupted; its guests, daemon, cgroup and swap file are gone',
              file=sys.stderr)
        sys.exit(130)
