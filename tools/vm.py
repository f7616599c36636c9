#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The one place that owns the QEMU command line of a pagehint guest.

A guest runs in its own directory (on tmpfs, under /dev/shm) holding:
  ram          guest RAM: a shared memory-backend-file, so that the host
               sees exactly what the guest holds and can punch holes in it
  table        the page-state table, exposed as an ivshmem-plain device;
               pagehintd creates it and the RAM file ("pagehintd init")
  qmp.sock     QEMU's QMP socket, followed by pagehintd when it runs
  data.img     a private copy of the data disk (virtio-blk, /dev/vda)
  swap.img     a private copy of the swap disk (virtio-blk, /dev/vdb)
  console.log  the first serial port: the kernel console
  tap.log      the second serial port: results from the guest's init

The s390 variant boots the same way in QEMU's s390-ccw machine: the kernel
console on the SCLP console, results on a virtio console, the disks on
virtio-blk over channel I/O, and the table given to the machine, whose
emulation of ESSA keeps the guest's states in it (qemu/patches).  With
stock_qemu, Debian's qemu-system-s390x runs it, which has no ESSA.

Used as a module by the test runner and as a command by people:
  tools/vm.py --plan run --mem 1024
"""

import argparse
import bisect
import ctypes
import errno
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(TOP, 'build')
QEMU = 'qemu-system-x86_64'
# The s390 guest's: the project's build (qemu/build.sh), or Debian's
QEMU_S390 = os.path.join(BUILD, 'qemu-obj', 'qemu-system-s390x')
QEMU_S390_STOCK = 'qemu-system-s390x'

PAGEHINTD = os.path.join(BUILD, 'host', 'pagehintd')
# the same with its test hooks (--stop-after-claiming): only where a test
# needs them; every other boot runs pagehintd as it is installed
PAGEHINTD_TEST_HOOKS = os.path.join(BUILD, 'host', 'test-hooks', 'pagehintd')


def kernel_image(variant):
    arch = 's390' if variant == 's390' else 'x86'
    return os.path.join(BUILD, 'obj-' + variant, 'arch', arch, 'boot', 'bzImage')


def initramfs(variant):
    return os.path.join(BUILD, 'initramfs-%s.cpio.gz' % variant)


class Result:
    """How a guest run ended, and what it left behind."""

    def __init__(self, status, run_dir, elapsed, returncode, plan, daemon, daemon_exits=()):
        self.status = status          # 'exited', 'timeout' or 'stalled'
        self.run_dir = run_dir
        self.elapsed = elapsed
        self.returncode = returncode
        self.plan = plan
        self.daemon = daemon          # whether pagehintd ran beside it
        # how each pagehintd process of the run ended (DaemonExit)
        self.daemon_exits = list(daemon_exits)

    def read(self, name):
        try:
            with open(os.path.join(self.run_dir, name), errors='replace') as f:
                return f.read()
        except FileNotFoundError:
            return ''

    @property
    def console(self):
        return self.read('console.log')

    @property
    def tap(self):
        return self.read('tap.log')


class DaemonExit:
    """How one pagehintd process ended: its exit status (negative: the
    signal that killed it), the signal the test itself sent to end it
    (None: nobody asked it to end, so it had to end on its own, with
    QEMU), and whether it outlived QEMU and had to be stopped."""

    def __init__(self, pid, returncode, asked, outlived):
        self.pid = pid
        self.returncode = returncode
        self.asked = asked
        self.outlived = outlived

    def trouble(self):
        """What is wrong with how it ended, or '' when nothing is."""
        if self.outlived:
            return 'pagehintd %d was still running %d s after QEMU exited' % (
                self.pid, DAEMON_EXIT_S)
        if self.asked is None:
            wanted = 0
        else:
            # pagehintd ends cleanly on SIGTERM; SIGKILL is what it dies of
            wanted = -signal.SIGKILL if self.asked == signal.SIGKILL else 0
        if self.returncode == wanted:
            return ''
        how = ('killed by %s' % signal.Signals(-self.returncode).name
               if self.returncode < 0 else 'exit status %d' % self.returncode)
        return 'pagehintd %d: %s, %s' % (
            self.pid, how, 'nobody asked it to end' if self.asked is None
            else 'when the test sent it %s' % signal.Signals(self.asked).name)


# How long pagehintd may take to end once QEMU has (it sees the QMP socket
# close at once): only a daemon that does not end waits this long.
DAEMON_EXIT_S = 60


class Guest:
    def __init__(self, name, plan='check', variant='debug', mem_mib=1024,
                 cpus=2, timeout=600, accel='auto', cmdline='',
                 balloon=False, daemon_args=None, before_qemu=None, log_dir=None,
                 disks_dir=None, kunit=False, daemon_later=False, status=True,
                 stock_qemu=False, s390_table=True, test_hooks=False, share_data=False):
        self.name = name
        # the host's copy of the data disk's files as a read-only 9p share
        # (mount tag "data"): a file system whose cache stays stable
        self.share_data = share_data
        self.s390 = variant == 's390'
        self.stock_qemu = stock_qemu
        # s390: whether the machine keeps the guest's states in the table
        self.s390_table = s390_table
        self.plan = plan
        self.variant = variant
        self.mem_mib = mem_mib
        # Under TCG, guest atomics are host atomics only when more than
        # one vCPU is possible (MTTCG); pagehintd's compare-and-swap on
        # the shared table depends on it.  Never go below two.
        self.cpus = max(cpus, 1)
        self.maxcpus = max(cpus, 2)
        self.timeout = timeout
        self.accel = accel
        self.cmdline = cmdline
        self.balloon = balloon
        # The built-in KUnit suites run only in the boots made for them:
        # some of their cases hold a CPU for a while, which no other test
        # should have to live with.
        self.kunit = kunit
        # None: no pagehintd; else the arguments for "pagehintd run"
        self.daemon_args = daemon_args
        # run pagehintd's test build, whose arguments may use its hooks
        self.daemon_binary = PAGEHINTD_TEST_HOOKS if test_hooks else PAGEHINTD
        # pagehintd's status line every second, which counts every frame's
        # state: the tests read it; a measurement of the daemon's own cost
        # leaves it out
        self.status = status
        self.daemon = None
        # every pagehintd started on this guest: [Popen, signal the test
        # sent to end it or None, outlived QEMU]
        self.daemon_runs = []
        self.symbols = None             # SymbolMap, read when first needed
        # QEMU runs as for a daemon, but the caller starts it (start_daemon)
        self.daemon_later = daemon_later
        self.before_qemu = before_qemu  # called with the guest once its files exist
        self.disks_dir = disks_dir or os.path.join(BUILD, 'disks')
        self.run_dir = os.path.join('/dev/shm', 'pagehint-%s-%d' % (name, os.getpid()))
        self.log_dir = log_dir or os.path.join(BUILD, 'logs', name)
        self.proc = None
        self.started = None

    def path(self, name):
        return os.path.join(self.run_dir, name)

    def command_s390(self):
        """The s390 guest: one vCPU, which the table's emulation needs
        (a frame becomes volatile after a TLB flush of the asking vCPU)."""
        mem = '%dM' % self.mem_mib
        # debug_pagealloc: CONFIG_PAGE_STATES_DEBUG unmaps volatile folios
        append = 'console=ttysclp0 panic=-1 debug_pagealloc=on plan=%s %s' % (
            self.plan, self.cmdline)
        if not self.kunit:
            append += ' kunit.enable=0'
        machine = 's390-ccw-virtio,memory-backend=ram'
        if not self.stock_qemu and self.s390_table:
            machine += ',page-states=pagestates'
            # this QEMU delivers the discard fault, which the guest cannot
            # ask (KVM does not): mapped page cache may be volatile
            append += ' page_states.discard_fault=1'
        cmd = [QEMU_S390_STOCK if self.stock_qemu else QEMU_S390,
               '-nodefaults', '-display', 'none',
               # the machine loads its IPL firmware even with -kernel:
               # Debian's (qemu-system-data)
               '-L', '/usr/share/qemu',
               '-machine', machine, '-m', mem, '-smp', '1,maxcpus=1',
               '-accel', 'tcg', '-cpu', 'max',
               '-object', 'memory-backend-file,id=ram,size=%s,mem-path=%s,share=on'
               % (mem, self.path('ram')),
               '-object', 'memory-backend-file,id=pagestates,size=%d,mem-path=%s,share=on'
               % (os.path.getsize(self.path('table')), self.path('table')),
               '-drive', 'file=%s,if=none,id=data,format=raw' % self.path('data.img'),
               '-device', 'virtio-blk-ccw,drive=data,devno=fe.0.0001',
               '-drive', 'file=%s,if=none,id=swap,format=raw' % self.path('swap.img'),
               '-device', 'virtio-blk-ccw,drive=swap,devno=fe.0.0002',
               '-chardev', 'file,id=con,path=%s' % self.path('console.log'),
               '-device', 'sclpconsole,chardev=con',
               '-chardev', 'file,id=tap,path=%s' % self.path('tap.log'),
               '-device', 'virtio-serial-ccw,devno=fe.0.0003',
               '-device', 'virtconsole,chardev=tap',
               # the host's words to the guest (tell, guest/hostwait): hvc1
               '-chardev', 'pipe,id=host,path=%s' % self.path('host'),
               '-device', 'virtconsole,chardev=host',
               '-kernel', kernel_image(self.variant),
               '-initrd', initramfs(self.variant),
               '-append', append.strip(),
               '-qmp', 'unix:%s,server=on,wait=off' % self.path('monitor.sock')]
        return cmd + self.reset_args()

    def reset_args(self):
        """What a reset does: with pagehintd, a reboot or power-off stops
        the guest before it runs on, so pagehintd can start a new table
        epoch first (docs/protocol.md)."""
        if self.daemon_args is not None:
            return ['-qmp', 'unix:%s,server=on,wait=off' % self.path('qmp.sock'),
                    '-action', 'reboot=shutdown,shutdown=pause']
        return ['-no-reboot']

    def command(self, accel):
        if self.s390:
            return self.command_s390()
        mem = '%dM' % self.mem_mib
        append = 'console=ttyS0 panic=-1 plan=%s %s' % (self.plan, self.cmdline)
        if not self.kunit:
            append += ' kunit.enable=0'
        if self.variant == 'debug':
            # CONFIG_PAGE_STATES_DEBUG unmaps volatile folios through it
            append += ' debug_pagealloc=on'
        cmd = [QEMU, '-nodefaults', '-display', 'none',
               '-machine', 'q35,memory-backend=ram',
               '-m', mem, '-smp', '%d,maxcpus=%d' % (self.cpus, self.maxcpus),
               '-object', 'memory-backend-file,id=ram,size=%s,mem-path=%s,share=on'
               % (mem, self.path('ram')),
               '-object', 'memory-backend-file,id=pagestates,size=%d,mem-path=%s,share=on'
               % (os.path.getsize(self.path('table')), self.path('table')),
               # on a root port of its own, so that a test can unplug it
               '-device', 'pcie-root-port,id=%s,chassis=1' % TABLE_PORT,
               '-device', table_device(),
               # vda, vdb, vdc in this order.  The swap disk without
               # indirect descriptors: under memory pressure the guest
               # allocates their tables with GFP_ATOMIC for every swap
               # write, and a failure warns (then falls back).
               '-drive', 'file=%s,if=none,id=data,format=raw' % self.path('data.img'),
               '-device', 'virtio-blk-pci,drive=data',
               '-drive', 'file=%s,if=none,id=swap,format=raw' % self.path('swap.img'),
               '-device', 'virtio-blk-pci,drive=swap,indirect_desc=off',
               '-drive', 'file=%s,if=none,id=erofs,format=raw,readonly=on'
               % os.path.join(self.disks_dir, 'data.erofs'),
               '-device', 'virtio-blk-pci,drive=erofs',
               '-kernel', kernel_image(self.variant),
               '-initrd', initramfs(self.variant),
               '-append', append.strip(),
               '-serial', 'file:' + self.path('console.log'),
               '-serial', 'file:' + self.path('tap.log'),
               # the host's words to the guest (tell, guest/hostwait)
               '-chardev', 'pipe,id=host,path=%s' % self.path('host'),
               '-serial', 'chardev:host',
               # the runner's own monitor, apart from pagehintd's: where the
               # vCPUs are when a guest hangs (hang_report)
               '-qmp', 'unix:%s,server=on,wait=off' % self.path('monitor.sock')]
        if accel == 'kvm':
            cmd += ['-accel', 'kvm', '-cpu', 'host']
        else:
            cmd += ['-accel', 'tcg,thread=multi', '-cpu', 'max']
        if self.balloon:
            cmd += ['-device', 'virtio-balloon-pci,free-page-reporting=on']
        if self.share_data:
            cmd += ['-virtfs', 'local,path=%s,mount_tag=data,security_model=none,readonly=on'
                    % os.path.join(self.disks_dir, 'data')]
        return cmd + self.reset_args()

    def start(self):
        need = [kernel_image(self.variant), initramfs(self.variant), PAGEHINTD, self.daemon_binary]
        if self.s390 and not self.stock_qemu:
            need.append(QEMU_S390)
        for f in need:
            if not os.path.exists(f):
                raise FileNotFoundError('%s is missing: run "make build"' % f)
        if self.s390:
            accel = 'tcg'
        else:
            accel = pick_accel(self.variant) if self.accel == 'auto' else self.accel
        shutil.rmtree(self.run_dir, ignore_errors=True)
        os.makedirs(self.run_dir)
        if not os.path.exists(os.path.join(self.disks_dir, 'data.erofs')):
            raise FileNotFoundError('%s/data.erofs is missing: run "make disks"' % self.disks_dir)
        if self.share_data and not os.path.isdir(os.path.join(self.disks_dir, 'data')):
            raise FileNotFoundError('%s/data is missing: run "make disks"' % self.disks_dir)
        for disk in ('data.img', 'swap.img'):
            subprocess.run(['cp', '--sparse=always', os.path.join(self.disks_dir, disk),
                            self.path(disk)], check=True)
        subprocess.run([PAGEHINTD, 'init', '--table', self.path('table'),
                        '--ram', self.path('ram'), '--mem-mib', str(self.mem_mib)], check=True)
        for end in ('host.in', 'host.out'):
            os.mkfifo(self.path(end), 0o600)
        if self.before_qemu:
            self.before_qemu(self)
        self.accel_used = accel
        self.started = time.monotonic()
        self.proc = subprocess.Popen(self.command(accel), stdin=subprocess.DEVNULL,
                                     stdout=open(self.path('qemu.log'), 'w'),
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=die_with_parent)
        if self.daemon_args is not None and not self.daemon_later:
            self.start_daemon()
        return self

    def start_daemon(self):
        """Start pagehintd on this guest's table; QEMU must be running."""
        sock = self.path('qmp.sock')
        deadline = time.monotonic() + 10
        while not os.path.exists(sock) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.daemon = subprocess.Popen(
            [self.daemon_binary, 'run', '--table', self.path('table'), '--ram', self.path('ram'),
             '--qmp', sock] + (['--status-ms', '1000', '--json'] if self.status else []) +
            list(self.daemon_args),
            stdin=subprocess.DEVNULL, stdout=open(self.path('pagehintd.jsonl'), 'a'),
            stderr=open(self.path('pagehintd.log'), 'a'), preexec_fn=die_with_parent)
        self.daemon_runs.append([self.daemon, None, False])
        return self.daemon

    def stop_daemon(self, sig=signal.SIGTERM):
        """Signal pagehintd and wait for it; SIGCONT too, so that a daemon a
        test left stopped acts on the signal, and SIGKILL if it does not."""
        if self.daemon and self.daemon.poll() is None:
            self.daemon_runs[-1][1] = sig
            self.daemon.send_signal(sig)
            self.daemon.send_signal(signal.SIGCONT)
            try:
                self.daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
        return self.daemon.returncode if self.daemon else None

    def tell(self, word):
        """Say WORD to the guest, which guest/hostwait waits for: a test
        step that needs the host to have acted first waits for its word.
        QEMU holds the pipe open (read and write), so this never blocks
        on a missing reader, and the guest keeps what it was told."""
        try:
            fd = os.open(self.path('host.in'), os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno == errno.ENXIO:  # QEMU is gone: nobody to tell
                return False
            raise
        try:
            os.write(fd, (word + '\n').encode())
        finally:
            os.close(fd)
        return True

    def read(self, name):
        """A file of the running guest's directory ('' until it exists)."""
        try:
            with open(self.path(name), errors='replace') as f:
                return f.read()
        except FileNotFoundError:
            return ''

    def resident_mib(self):
        """Host memory behind the guest's RAM file: its allocated blocks.
        A missing file is an error, not a guest that holds nothing."""
        return os.stat(self.path('ram')).st_blocks * 512 / (1 << 20)

    def progress(self):
        """How much the guest has said so far, on its console and its
        results port: what grows while it makes progress."""
        size = 0
        for name in ('console.log', 'tap.log'):
            try:
                size += os.path.getsize(self.path(name))
            except FileNotFoundError:
                pass
        return size

    def wait(self, stall=None, tick=None):
        """Wait for QEMU to exit; kill it at the timeout, or once the guest
        has said nothing for STALL seconds (None: only the timeout).  TICK,
        if given, is called about once a second meanwhile."""
        status = 'exited'
        said, said_at = self.progress(), time.monotonic()
        while self.proc.poll() is None:
            now = time.monotonic()
            if now - self.started >= self.timeout:
                status = 'timeout'
            elif stall and now - said_at >= stall:
                status = 'stalled'
            else:
                try:
                    self.proc.wait(timeout=min(1, max(0.01, self.timeout - (now - self.started))))
                except subprocess.TimeoutExpired:
                    if self.progress() != said:
                        said, said_at = self.progress(), time.monotonic()
                    if tick:
                        tick()
                continue
            self.hang_report()
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.daemon:
            try:
                self.daemon.wait(timeout=DAEMON_EXIT_S)
            except subprocess.TimeoutExpired:
                self.stop_daemon()
                self.daemon_runs[-1][1:] = [None, True]
        result = Result(status, self.run_dir, time.monotonic() - self.started,
                        self.proc.returncode, self.plan, self.daemon_args is not None,
                        [DaemonExit(p.pid, p.returncode, asked, outlived)
                         for p, asked, outlived in self.daemon_runs])
        self.keep_logs(result)
        return result

    def vcpu_places(self, need_symbols=False):
        """Where each vCPU is now: function+offset, by the kernel's
        System.map (bare addresses without one, or ValueError if
        NEED_SYMBOLS).  Raises OSError or ValueError without a monitor."""
        path = os.path.join(BUILD, 'obj-' + self.variant, 'System.map')
        if self.symbols is None:
            self.symbols = SymbolMap(path)
        if need_symbols and not self.symbols.addrs:
            raise ValueError('no kernel symbols in %s' % path)
        text = qmp_hmp(self.path('monitor.sock'), 'info registers -a')
        return [self.symbols.name(int(rip, 16))
                for rip in re.findall(r'RIP=([0-9a-f]{16})', text)]

    def hang_report(self, samples=5):
        """Before a hung guest is killed: where each vCPU is, a few times
        over, into hang.txt.  A guest that spins shows the same functions
        every time."""
        lines = []
        try:
            for i in range(samples):
                lines.append('sample %d: %s' % (i, ', '.join(
                    'cpu%d %s' % (cpu, place) for cpu, place in enumerate(self.vcpu_places()))))
                time.sleep(0.2)
        except (OSError, ValueError) as e:
            lines.append('no vCPU registers: %s' % e)
        with open(self.path('hang.txt'), 'w') as f:
            f.write('\n'.join(lines) + '\n')

    def keep_logs(self, result):
        os.makedirs(self.log_dir, exist_ok=True)
        for name in ('console.log', 'tap.log', 'qemu.log', 'pagehintd.log', 'pagehintd.jsonl',
                     'hang.txt'):
            if os.path.exists(self.path(name)):
                shutil.copy(self.path(name), self.log_dir)
        result.run_dir = self.log_dir

    def cleanup(self):
        if self.daemon and self.daemon.poll() is None:
            self.daemon.kill()
            self.daemon.wait()
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        shutil.rmtree(self.run_dir, ignore_errors=True)

    def run(self):
        try:
            self.start()
            return self.wait()
        finally:
            self.cleanup()


PR_SET_PDEATHSIG = 1


def die_with_parent():
    """In a child, before exec: be killed when the runner dies, however it
    dies (SIGKILL included), so that no QEMU or pagehintd outlives it."""
    ppid = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != ppid:    # the parent died before prctl()
        os.kill(os.getpid(), signal.SIGKILL)


def exit_on_sigterm():
    """SIGTERM and SIGHUP end the runner the way Ctrl-C does: through the
    finally blocks that stop the guest and its daemon and clean up."""
    def handler(signum, frame):
        raise KeyboardInterrupt('signal %d' % signum)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


# The hot-pluggable PCIe port of the table's ivshmem device
TABLE_PORT = 'pagehint-port'


def table_device(memdev='pagestates'):
    """The ivshmem-plain device that shows the guest its table, on its own
    hot-pluggable port; MEMDEV names the memory backend of the table file."""
    return 'ivshmem-plain,id=pagehint,memdev=%s,bus=%s' % (memdev, TABLE_PORT)


def qmp_hmp(sock_path, command, timeout=5):
    """One human-monitor command over a QMP socket; its text."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(sock_path)
        stream = sock.makefile('rw')
        stream.readline()   # the greeting
        for cmd in ({'execute': 'qmp_capabilities'},
                    {'execute': 'human-monitor-command',
                     'arguments': {'command-line': command}}):
            stream.write(json.dumps(cmd) + '\n')
            stream.flush()
            while True:
                reply = json.loads(stream.readline())
                if 'return' in reply or 'error' in reply:
                    break
        if 'error' in reply:
            raise ValueError(reply['error'].get('desc', 'QMP error'))
        return reply['return']


class SymbolMap:
    """Kernel addresses to function+offset, from System.map."""

    def __init__(self, path):
        self.addrs, self.names = [], []
        try:
            with open(path) as f:
                for line in f:
                    addr, kind, name = line.split()[:3]
                    if kind in 'tTwW':
                        self.addrs.append(int(addr, 16))
                        self.names.append(name)
        except (FileNotFoundError, ValueError):
            pass

    def name(self, addr):
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0 or addr - self.addrs[i] > 0x10000:
            return '%#x' % addr
        return '%s+%#x' % (self.names[i], addr - self.addrs[i])


def pick_accel(variant):
    """KVM if a short probe boot succeeds with it, else TCG.

    /dev/kvm opening is not enough: on some hosts it opens and the guest
    then stalls.  The answer is cached per kernel image.
    """
    if os.environ.get('PAGEHINT_ACCEL') in ('kvm', 'tcg'):
        return os.environ['PAGEHINT_ACCEL']
    if not os.access('/dev/kvm', os.R_OK | os.W_OK):
        return 'tcg'
    cache = os.path.join(BUILD, 'accel-probe')
    key = '%s %d' % (kernel_image(variant), os.stat(kernel_image(variant)).st_mtime)
    try:
        with open(cache) as f:
            cached_key, answer = f.read().rsplit(' ', 1)
        if cached_key == key:
            return answer.strip()
    except (FileNotFoundError, ValueError):
        pass
    probe = Guest('kvm-probe', plan='probe', variant=variant, mem_mib=256,
                  timeout=30, accel='kvm')
    result = probe.run()
    answer = 'kvm' if result.status == 'exited' and 'plan: done' in result.tap else 'tcg'
    print('vm: KVM probe %s; using %s' % ('booted' if answer == 'kvm' else 'failed', answer),
          file=sys.stderr)
    with open(cache, 'w') as f:
        f.write('%s %s\n' % (key, answer))
    return answer


def main():
    ap = argparse.ArgumentParser(description='Boot the pagehint test guest once.')
    ap.add_argument('--plan', default='run')
    ap.add_argument('--variant', default='debug', choices=('debug', 'release'))
    ap.add_argument('--mem', type=int, default=1024, help='guest RAM in MiB')
    ap.add_argument('--cpus', type=int, default=2)
    ap.add_argument('--timeout', type=int, default=600)
    ap.add_argument('--accel', default='auto', choices=('auto', 'kvm', 'tcg'))
    ap.add_argument('--cmdline', default='', help='extra kernel command line')
    ap.add_argument('--daemon', action='store_true', help='run pagehintd on the guest')
    args = ap.parse_args()
    guest = Guest('manual', plan=args.plan, variant=args.variant, mem_mib=args.mem,
                  cpus=args.cpus, timeout=args.timeout, accel=args.accel,
                  cmdline=args.cmdline, daemon_args=[] if args.daemon else None)
    exit_on_sigterm()
    result = guest.run()
    print('vm: %s after %.1f s; logs in %s' % (result.status, result.elapsed, result.run_dir))
    return 0 if result.status == 'exited' and 'plan: done' in result.tap else 1


if __name__ == '__main__':
    sys.exit(main())
