# SPDX-License-Identifier: GPL-2.0
"""pagehintd host against Debian's libvirtd, with domains started the way
operators start them: defined from the README's XML, prepared by the
pagehint hook, served by one daemon.

libvirtd runs in a mount namespace of its own, where its /etc/libvirt,
/run/libvirt, /var/lib/libvirt, /var/cache/libvirt and /var/log/libvirt
are directories of the test (under /dev/shm): a private configuration
(qemu.conf, the hook) and private state, so that the machine's own
libvirt, if it has one, is neither used nor touched.  pagehintd and virsh
run in that namespace too, with libvirt's default URI and paths, as on a
host.  At the end (Ctrl-C too) every process of the namespace is killed.
"""

import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import guestlog
import vm

# libvirt's directories, and what this test puts behind each
PRIVATE_DIRS = {'/etc/libvirt': 'etc', '/run/libvirt': 'run', '/var/lib/libvirt': 'lib',
                '/var/cache/libvirt': 'cache', '/var/log/libvirt': 'log'}

QEMU_CONF = '''# pagehint's libvirt checks (tools/libvirt_check.py)
memory_backing_dir = "{ram}"
# no virtlogd: QEMU's serial files are written by QEMU itself
stdio_handler = "file"
# the test's files belong to root; no namespace of libvirt's own for QEMU
user = "root"
group = "root"
dynamic_ownership = 0
security_driver = "none"
namespaces = [ ]
'''

LIBVIRTD_CONF = '''# pagehint's libvirt checks: root only, through the private socket
unix_sock_group = "root"
unix_sock_ro_perms = "0700"
unix_sock_rw_perms = "0700"
auth_unix_ro = "none"
auth_unix_rw = "none"
log_outputs = "3:file:/var/log/libvirt/libvirtd.log"
'''

# The README's domain (section "pagehint under libvirt"), and what a test
# guest needs besides: its kernel and plan, its serial ports, its disks.
DOMAIN_XML = '''<domain type='qemu'>
  <name>{name}</name>
  <metadata>
    <pagehint:pagehint xmlns:pagehint="urn:x-pagehint:libvirt:1" target_mib="none"
                       policy="immediate"/>
  </metadata>
  <memory unit='MiB'>{mem_mib}</memory>
  <memoryBacking>
    <source type='file'/>
    <access mode='{access}'/>
  </memoryBacking>
  <vcpu>2</vcpu>
  <cpu mode='maximum'/>
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <kernel>{kernel}</kernel>
    <initrd>{initrd}</initrd>
    <cmdline>console=ttyS0 panic=-1 plan={plan} kunit.enable=0{debug}</cmdline>
  </os>
  <features><acpi/></features>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/>
      <source file='{dir}/data.img'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <serial type='file'><source path='{dir}/console.log'/><target port='0'/></serial>
    <serial type='file'><source path='{dir}/tap.log'/><target port='1'/></serial>
    <serial type='pipe'><source path='{dir}/host'/><target port='2'/></serial>
    <shmem name='{table}'>
      <model type='ivshmem-plain'/>
      <size unit='M'>{shmem_mib}</size>
    </shmem>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
  </devices>
</domain>
'''

# the table header's first eight bytes (include/uapi/linux/pagehint.h)
PAGEHINT_MAGIC = b'PAGEHINT'

# how long a check waits for what must happen before it calls it missing
MISSING_AFTER_S = 300


def wait_for(pred, timeout, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(step)
    return None


def read(path):
    try:
        with open(path, errors='replace') as f:
            return f.read()
    except FileNotFoundError:
        return ''


class Libvirt:
    """A private libvirtd, its hook and its domains; pagehintd host."""

    def __init__(self, variant='debug'):
        self.variant = variant
        self.base = None
        self.holder = None      # a process that holds the namespace
        self.libvirtd = None
        self.daemon = None
        self.log_dir = os.path.join(vm.BUILD, 'logs', 'libvirt')

    def path(self, *names):
        return os.path.join(self.base, *names)

    def ns(self, argv, **kw):
        """ARGV in libvirt's namespace."""
        return ['nsenter', '-t', str(self.holder.pid), '-m', '--'] + list(argv)

    def start(self):
        # a directory of its own, not a name another user could have made
        # first: root's libvirtd runs the hook and reads qemu.conf from it
        self.base = tempfile.mkdtemp(prefix='pagehint-lv-', dir='/dev/shm')
        for d in list(PRIVATE_DIRS.values()) + ['ram', 'guests']:
            os.makedirs(self.path(d))
        os.makedirs(self.path('etc', 'hooks', 'qemu.d'))
        with open(self.path('etc', 'qemu.conf'), 'w') as f:
            f.write(QEMU_CONF.format(ram=self.path('ram')))
        with open(self.path('etc', 'libvirtd.conf'), 'w') as f:
            f.write(LIBVIRTD_CONF)
        # the hook as "make install" puts it, with the binary of this build
        hook = self.path('etc', 'hooks', 'qemu.d', 'pagehint')
        with open(os.path.join(vm.TOP, 'host', 'pagehint-hook.in')) as f:
            text = f.read().replace('@PAGEHINTD@', vm.PAGEHINTD)
        with open(hook, 'w') as f:
            f.write(text)
        os.chmod(hook, 0o755)
        mounts = ' && '.join('mkdir -p %s && mount --bind %s %s' % (target, self.path(d), target)
                             for target, d in PRIVATE_DIRS.items())
        self.holder = subprocess.Popen(
            ['unshare', '-m', '--propagation', 'private', 'sh', '-c',
             mounts + ' && exec sleep infinity'],
            stdin=subprocess.DEVNULL, preexec_fn=vm.die_with_parent)
        if not wait_for(lambda: os.path.ismount('/proc/%d/root/run/libvirt' % self.holder.pid)
                        or self.holder.poll() is not None, 30) or self.holder.poll() is not None:
            raise OSError('the namespace for libvirtd did not come up')
        self.start_libvirtd()

    def start_libvirtd(self):
        self.libvirtd = subprocess.Popen(
            self.ns(['libvirtd', '--pid-file', '/run/libvirt/libvirtd.pid']),
            stdin=subprocess.DEVNULL, stdout=open(self.path('libvirtd.out'), 'a'),
            stderr=subprocess.STDOUT, preexec_fn=vm.die_with_parent)
        sock = self.path('run', 'libvirt-sock')
        if not wait_for(lambda: (os.path.exists(sock) and self.virsh('uri', check=False)
                                 .returncode == 0) or self.libvirtd.poll() is not None, 60) \
                or self.libvirtd.poll() is not None:
            raise OSError('libvirtd did not start: %s' % read(self.path('libvirtd.out'))[-500:])

    def stop_libvirtd(self):
        self.libvirtd.send_signal(signal.SIGTERM)
        try:
            self.libvirtd.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.libvirtd.kill()
            self.libvirtd.wait()
        # libvirtd leaves its socket behind when killed; a new one replaces it
        try:
            os.unlink(self.path('run', 'libvirt-sock'))
        except FileNotFoundError:
            pass

    def virsh(self, *args, check=True, stdin=None):
        p = subprocess.run(self.ns(['virsh', '-q', '-c', 'qemu:///system'] + list(args)),
                           input=stdin, capture_output=True, text=True, timeout=120)
        if check and p.returncode:
            raise OSError('virsh %s: %s' % (' '.join(args), (p.stderr or p.stdout).strip()))
        return p

    def start_daemon(self, *extra):
        self.daemon = subprocess.Popen(
            self.ns([vm.PAGEHINTD, 'host', '--memory-backing-dir', self.path('ram'),
                     '--status-ms', '500', '--metrics-file', self.path('metrics.prom'),
                     '--metrics-ms', '500'] + list(extra)),
            stdin=subprocess.DEVNULL, stdout=open(self.path('pagehintd.out'), 'a'),
            stderr=open(self.path('pagehintd.log'), 'a'), preexec_fn=vm.die_with_parent)

    def daemon_log(self):
        return read(self.path('pagehintd.log'))

    def status(self, name):
        """The daemon's last status line for domain NAME, as numbers."""
        pat = re.compile(r'^pagehintd: %s (attached|waiting): (\d+) passes, (\d+) chunks read, '
                         r'dropped (\d+) unused (\d+) volatile, host holds ([\d.]+) MiB'
                         r'(?:, budget asks ([\d.]+) MiB, short ([\d.]+) MiB)?$'
                         % re.escape(name), re.M)
        found = pat.findall(read(self.path('pagehintd.out')))
        if not found:
            return None
        state, passes, chunks, unused, volatile, holds, asks, short = found[-1]
        return {'attached': state == 'attached', 'unused': int(unused),
                'volatile': int(volatile), 'holds_mib': float(holds),
                'asks_mib': float(asks or 0), 'short_mib': float(short or 0)}

    def stop_daemon(self):
        self.daemon.send_signal(signal.SIGTERM)
        self.daemon.wait(timeout=60)
        return self.daemon.returncode

    def ram_held(self, dom):
        """What the host holds of domain DOM: its RAM file's blocks, in bytes."""
        found = glob.glob(self.path('ram', 'libvirt', 'qemu', '*-' + dom.name, 'pc.ram'))
        if len(found) != 1:
            raise OSError('%s: no one RAM file: %s' % (dom.name, found))
        return os.stat(found[0]).st_blocks * 512

    def define(self, name, mem_mib, plan='libvirt', shmem_mib=1, table=None, access='shared'):
        d = self.path('guests', name)
        os.makedirs(d)
        disks = os.path.join(vm.BUILD, 'disks')
        subprocess.run(['cp', '--sparse=always', os.path.join(disks, 'data.img'),
                        os.path.join(d, 'data.img')], check=True)
        for end in ('host.in', 'host.out'):
            os.mkfifo(os.path.join(d, end), 0o600)
        # domain names are the namespace's own; tables are in the host's /dev/shm
        table = table or 'pagehint-lv%d-%s' % (os.getpid(), name)
        xml = DOMAIN_XML.format(name=name, mem_mib=mem_mib, plan=plan, dir=d, access=access,
                                table=table, shmem_mib=shmem_mib,
                                kernel=vm.kernel_image(self.variant),
                                initrd=vm.initramfs(self.variant),
                                # CONFIG_PAGE_STATES_DEBUG unmaps volatile folios through it
                                debug=' debug_pagealloc=on' if self.variant == 'debug' else '')
        with open(os.path.join(d, 'domain.xml'), 'w') as f:
            f.write(xml)
        self.virsh('define', os.path.join(d, 'domain.xml'))
        return Domain(self, name, d, mem_mib, plan, table)

    def stop(self):
        """Everything of the namespace ends, whatever state it is in."""
        if not self.holder:
            if self.base:
                shutil.rmtree(self.base, ignore_errors=True)
            return
        try:
            ns = os.readlink('/proc/%d/ns/mnt' % self.holder.pid)
        except OSError:
            ns = None
        if self.libvirtd and self.libvirtd.poll() is None:
            for name in self.virsh('list', '--name', check=False).stdout.split():
                self.virsh('destroy', name, check=False)
        for p in (self.daemon, self.libvirtd):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if ns:
            for pid in os.listdir('/proc'):
                try:
                    if pid.isdigit() and int(pid) != self.holder.pid and \
                            os.readlink('/proc/%s/ns/mnt' % pid) == ns:
                        os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
        self.holder.kill()
        self.holder.wait()
        self.keep_logs()
        for name in os.listdir('/dev/shm'):
            if name.startswith('pagehint-lv%d-' % os.getpid()):
                os.unlink(os.path.join('/dev/shm', name))
        shutil.rmtree(self.base, ignore_errors=True)

    def keep_logs(self):
        shutil.rmtree(self.log_dir, ignore_errors=True)
        os.makedirs(self.log_dir)
        for rel in ('pagehintd.log', 'pagehintd.out', 'libvirtd.out', 'log/libvirtd.log'):
            if os.path.exists(self.path(rel)):
                shutil.copy(self.path(rel), os.path.join(self.log_dir, rel.replace('/', '-')))
        guests = self.path('guests')
        for name in os.listdir(guests) if os.path.isdir(guests) else ():
            for f in ('console.log', 'tap.log', 'domain.xml'):
                src = os.path.join(guests, name, f)
                if os.path.exists(src):
                    shutil.copy(src, os.path.join(self.log_dir, '%s-%s' % (name, f)))
            log = self.path('log', 'qemu', name + '.log')
            if os.path.exists(log):
                shutil.copy(log, os.path.join(self.log_dir, name + '-qemu.log'))


class Domain:
    def __init__(self, lv, name, run_dir, mem_mib, plan, table):
        self.lv, self.name, self.run_dir, self.mem_mib = lv, name, run_dir, mem_mib
        self.plan, self.table = plan, table
        self.started = None

    def start(self):
        self.started = time.monotonic()
        self.lv.virsh('start', self.name)

    def tap(self):
        return read(os.path.join(self.run_dir, 'tap.log'))

    def said(self, line, times=1):
        return self.tap().count(line + '\n') >= times

    def tell(self, word):
        fd = os.open(os.path.join(self.run_dir, 'host.in'), os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(fd, (word + '\n').encode())
        finally:
            os.close(fd)

    def state(self):
        return self.lv.virsh('domstate', self.name, check=False).stdout.strip()

    def result(self, status='exited'):
        """The boot as guestlog reads one: the plan's results, the console."""
        return vm.Result(status, self.run_dir, time.monotonic() - self.started, 0, self.plan,
                         False)


def check(results, name, passed, why=''):
    results.append(('libvirt: ' + name, bool(passed), why))
    return passed


def hold_and_look(lv, dom, results, boot=1, tell=True):
    """The guest freed 128 MiB and holds (mark: host may look): the daemon
    must have given its unused frames back, the RAM file's blocks too."""
    name = '%s: the memory it freed leaves the host' % dom.name
    if boot > 1:
        name += ' (boot %d)' % boot
    if not wait_for(lambda: dom.said('mark: host may look', boot), MISSING_AFTER_S):
        return check(results, name, False, 'the guest never freed its memory (no mark)')
    status = wait_for(lambda: (lambda s: s if s and s['attached'] and
                               s['holds_mib'] < dom.mem_mib / 2 else None)(lv.status(dom.name)),
                      MISSING_AFTER_S)
    last = status or lv.status(dom.name)
    check(results, name, status,
          'host holds %.1f of %d MiB, %d unused frames dropped' %
          (last['holds_mib'], dom.mem_mib, last['unused'])
          if last else 'no status line for the domain: not served')
    if tell:
        dom.tell('looked')
    return status


def said(lv, pattern, timeout=60):
    """The daemon's log line that matches PATTERN (a regex), once it says it."""
    return wait_for(lambda: re.search(pattern, lv.daemon_log(), re.M), timeout)


def check_said(lv, results, name, pattern, timeout=60):
    m = said(lv, pattern, timeout)
    return check(results, name, m, m.group(0) if m else
                 'the daemon never said /%s/; it said: %s' % (pattern, lv.daemon_log()[-600:]))


def check_served(lv, results, name, dom):
    check_said(lv, results, name, r'^pagehintd: domain %s \(.*\): serving, .*$'
               % re.escape(dom.name))


# Metadata the daemon must log and ignore: (XML, why it says)
BAD_METADATA = [
    ('<pagehint target_mib="lots"/>',
     "target_mib='lots' is not a decimal number of MiB or \"none\""),
    ('<pagehint target_mib="-5"/>',
     "target_mib='-5' is not a decimal number of MiB or \"none\""),
    ('<pagehint target_mib="99999999999"/>', "target_mib='99999999999' is over 16777216 MiB"),
    ('<pagehint target_mib="8" policy="immediate"><limit/></pagehint>',
     'unknown element <limit> in the pagehint metadata'),
    ('<pagehint target_mib="8" colour="red"/>', 'unknown attribute colour in the pagehint metadata'),
]


def set_metadata(lv, dom, xml):
    lv.virsh('metadata', dom.name, 'urn:x-pagehint:libvirt:1', '--key', 'pagehint',
             '--set', xml, '--live')


def target_through_metadata(lv, dom, results):
    """The guest read its files and holds: a target set live through the
    domain's metadata makes its clean cache volatile and the host drops
    it; metadata that is not a target is logged and ignored."""
    cached = wait_for(lambda: dom.said('mark: cached'), MISSING_AFTER_S)
    if not check(results, '%s read its files' % dom.name, cached, '' if cached else 'no mark'):
        return
    set_metadata(lv, dom, '<pagehint target_mib="32" policy="immediate"/>')
    check_said(lv, results, 'a target set live through the metadata is taken',
               r'^pagehintd: domain %s: target 32 MiB$' % re.escape(dom.name))
    dropped = wait_for(lambda: (lambda s: s if s and s['volatile'] else None)(
        lv.status(dom.name)), MISSING_AFTER_S)
    check(results, '%s: under the target, the host drops its clean cache' % dom.name, dropped,
          '%d volatile frames dropped' % dropped['volatile'] if dropped else
          'none dropped: %s' % lv.status(dom.name))
    for xml, why in BAD_METADATA:
        set_metadata(lv, dom, xml)
        check_said(lv, results, 'bad metadata %s is logged and ignored' % xml,
                   r'^pagehintd: domain %s: pagehint metadata ignored: %s; target stays 32 MiB$'
                   % (re.escape(dom.name), re.escape(why)))


def attached_sample(lv, dom, uuid):
    """The domain's pagehint_guest_attached sample at 1, labelled with the
    name and UUID libvirt gives it, from the daemon's metrics file."""
    m = re.search(r'^pagehint_guest_attached\{guest="%s",uuid="%s"\} 1$'
                  % (re.escape(dom.name), re.escape(uuid)),
                  read(lv.path('metrics.prom')), re.M)
    return m.group(0) if m else None


def check_metrics(lv, results, when, served, gone=()):
    """The metrics file is what promtool calls valid, has each domain of
    SERVED attached, and none of GONE."""
    text = read(lv.path('metrics.prom'))
    p = subprocess.run(['promtool', 'check', 'metrics'], input=text, capture_output=True,
                       text=True)
    check(results, 'the metrics file is valid to promtool %s' % when, text and p.returncode == 0,
          (p.stdout + p.stderr).strip()[-300:] or '%d bytes' % len(text))
    for dom in served:
        uuid = lv.virsh('domuuid', dom.name).stdout.strip()
        line = wait_for(lambda: attached_sample(lv, dom, uuid), 30)
        check(results, 'the metrics show %s attached, by name and UUID, %s' % (dom.name, when),
              line,
              line or 'no such sample in: %s' % read(lv.path('metrics.prom'))[:300])
    for dom in gone:
        left = wait_for(lambda: 'guest="%s"' % dom.name not in read(lv.path('metrics.prom')),
                        30)
        check(results, 'the metrics drop %s once it is gone' % dom.name, left,
              '' if left else 'its samples stay')


SHMEM_XML = '''<shmem name='{table}'>
  <model type='ivshmem-plain'/>
  <size unit='M'>1</size>
</shmem>
'''


def unplug_and_plug(lv, dom, results):
    """The table's <shmem> detached live: the guest lets it go, the daemon
    stops serving; attached again: the guest attaches afresh and the daemon
    serves it again."""
    xml = os.path.join(dom.run_dir, 'shmem.xml')
    with open(xml, 'w') as f:
        f.write(SHMEM_XML.format(table=dom.table))
    lv.virsh('detach-device', dom.name, xml, '--live')
    check_said(lv, results, 'a domain whose <shmem> is detached live is no longer served',
               r'^pagehintd: domain %s: no longer served: it has no <shmem> named pagehint'
               % re.escape(dom.name), MISSING_AFTER_S)
    console = os.path.join(dom.run_dir, 'console.log')
    gone = wait_for(lambda: 'page hinting off: the device is going away' in read(console),
                    MISSING_AFTER_S)
    check(results, '%s let its table go' % dom.name, gone,
          '' if gone else 'its console never said so')
    # the same XML as an operator would give it
    lv.virsh('attach-device', dom.name, xml, '--live')
    pattern = r'^pagehintd: domain %s attached$' % re.escape(dom.name)
    again = wait_for(lambda: len(re.findall(pattern, lv.daemon_log(), re.M)) == 2 and
                     read(console).count(guestlog.ATTACHED) == 2, MISSING_AFTER_S)
    check(results, 'its <shmem> attached again live, %s attaches and is served again'
          % dom.name, again, '' if again else 'the daemon said %d times that it attached, '
          'the guest %d times' % (len(re.findall(pattern, lv.daemon_log(), re.M)),
                                  read(console).count(guestlog.ATTACHED)))


# what the budget makes the two guests give back beyond their unused frames
BUDGET_CUT_MIB = 24


def budget_pair():
    """Two domains under one host budget: B must give what the two hold
    above it, from its clean cache; A, whose floor is all it has, gives
    nothing.  Both guests' data is checked after."""
    results = []
    lv = Libvirt()
    try:
        lv.start()
        a = lv.define('budget-a', 256, plan='libvirt-budget')
        b = lv.define('budget-b', 256, plan='libvirt-budget')
        # without a budget first (the domains' metadata: immediate): the
        # daemon gives back every unused frame, so that what the budget
        # then takes can only come from the clean cache
        lv.start_daemon()
        a.start()
        b.start()
        for dom in (a, b):
            cached = wait_for(lambda: dom.said('mark: cached'), MISSING_AFTER_S)
            check(results, 'budget: %s read its data disk' % dom.name, cached,
                  '' if cached else 'no mark')
            check_served(lv, results, 'budget: %s is served' % dom.name, dom)
        rc = lv.stop_daemon()
        check(results, 'budget: the daemon without a budget ends with status 0', rc == 0,
              'exit status %s' % rc)
        held = lv.ram_held(a) + lv.ram_held(b)
        budget_mib = held // (1 << 20) - BUDGET_CUT_MIB
        set_metadata(lv, a, '<pagehint target_mib="none" policy="aged" floor_mib="256"/>')
        set_metadata(lv, b, '<pagehint target_mib="none" policy="aged"/>')
        lv.start_daemon('--budget-mib', str(budget_mib))
        check_said(lv, results, 'budget: the daemon sees the domains over its budget',
                   r'^pagehintd: over budget: the domains hold [\d.]+ MiB, the budget is '
                   r'%d\.0 MiB$' % budget_mib)

        def within():
            sa, sb = lv.status(a.name), lv.status(b.name)
            if sa and sb and sa['holds_mib'] + sb['holds_mib'] <= budget_mib + 1:
                return sa, sb
            return None
        got = wait_for(within, MISSING_AFTER_S)
        sa, sb = got or (lv.status(a.name), lv.status(b.name))
        check(results, 'budget: the two domains come within the budget of %d MiB' % budget_mib,
              got, 'they hold %s and %s MiB' % (sa and sa['holds_mib'], sb and sb['holds_mib']))
        check(results, 'budget: the domain above its floor gave its clean cache',
              sb and sb['volatile'] > 0, 'status: %s' % sb)
        check(results, 'budget: the domain at its floor was asked for nothing',
              sa and sa['volatile'] == 0 and sa['asks_mib'] == 0, 'status: %s' % sa)
        for dom in (a, b):
            dom.tell('checked')
        for dom in (a, b):
            ended = wait_for(lambda: dom.state() == 'shut off', MISSING_AFTER_S)
            check(results, 'budget: %s ran its plan and powered off' % dom.name, ended,
                  '' if ended else 'still %s' % dom.state())
            results += guestlog.evaluate(dom.result(), 'libvirt ' + dom.name, attached=True)
        found = {}
        for dom in (a, b):
            m = re.search(r'^mark: frames found dropped and read again: (\d+)$', dom.tap(), re.M)
            found[dom.name] = int(m.group(1)) if m else None
        check(results, 'budget: %s read again what the host took, its data intact' % b.name,
              found[b.name], 'it says %s' % found[b.name])
        check(results, 'budget: %s found nothing taken' % a.name, found[a.name] == 0,
              'it says %s' % found[a.name])
        rc = lv.stop_daemon()
        check(results, 'budget: the daemon ends with status 0', rc == 0, 'exit status %s' % rc)
    except (OSError, subprocess.SubprocessError) as e:
        check(results, 'budget: the checks ran to their end', False, 'they broke off: %s' % e)
    finally:
        lv.stop()
    return results


def stage_libvirt():
    results = []
    lv = Libvirt()
    try:
        lv.start()
        check(results, 'a private libvirtd answers', True,
              lv.virsh('version').stdout.strip().splitlines()[-1])
        before = lv.define('before', 256)
        before.start()
        # QEMU would have made the file too, of the <shmem>'s size, zeroed:
        # only the hook writes a header, and the guest never writes its magic
        table = '/dev/shm/' + before.table
        try:
            with open(table, 'rb') as f:
                magic = f.read(8)
        except OSError as e:
            magic = repr(e).encode()
        check(results, 'the hook prepared the table of a domain before its QEMU started',
              magic == PAGEHINT_MAGIC, '%s starts with %r' % (table, magic))

        # started before the daemon, served alike
        wait_for(lambda: before.said('mark: host may look'), MISSING_AFTER_S)
        lv.start_daemon()
        check_served(lv, results, 'a domain started before the daemon is served', before)

        # a hostile guest beside the others, from now until the end
        hostile = lv.define('hostile', 256, plan='libvirt-hostile')
        hostile.start()
        check_served(lv, results, 'a hostile domain is served like any', hostile)
        began = wait_for(lambda: hostile.said('mark: hostile'), MISSING_AFTER_S)
        check(results, 'the hostile guest writes its table', began,
              '' if began else 'it never began (no mark)')
        hold_and_look(lv, before, results, tell=False)

        # RAM that is not shared: the hook prepares no table, the daemon
        # says why it does not serve the domain, the guest runs unhinted
        refused = lv.define('refused', 256, plan='libvirt-refused', access='private')
        refused.start()
        check_said(lv, results, 'a domain whose RAM is not shared is refused, and the daemon '
                   'says why', r'^pagehintd: domain %s: not served: its RAM file is not shared'
                   % re.escape(refused.name))
        ended = wait_for(lambda: refused.state() == 'shut off', MISSING_AFTER_S)
        check(results, 'the refused domain ran its plan and powered off', ended,
              '' if ended else 'still %s' % refused.state())
        results += guestlog.evaluate(refused.result(), 'libvirt ' + refused.name,
                                     expected_console=('running without page hinting',))

        after = lv.define('after', 2048, plan='libvirt-reboot')
        after.start()
        check_served(lv, results, 'a 2 GiB domain started after the daemon is served', after)
        hold_and_look(lv, after, results)
        check_said(lv, results, 'a guest that reboots itself gets a new table epoch',
                   r'^pagehintd: domain %s reboots: new table epoch$' % re.escape(after.name),
                   MISSING_AFTER_S)
        hold_and_look(lv, after, results, boot=2, tell=False)
        check_metrics(lv, results, 'with three domains served', (before, after, hostile))

        lv.virsh('suspend', before.name)
        check_said(lv, results, 'a paused domain is seen paused',
                   r'^pagehintd: domain %s paused$' % re.escape(before.name))
        lv.virsh('resume', before.name)
        check_said(lv, results, 'a resumed domain is seen running again',
                   r'^pagehintd: domain %s runs again$' % re.escape(before.name))

        unplug_and_plug(lv, before, results)

        lv.stop_libvirtd()
        check_said(lv, results, 'the daemon serves on when libvirtd goes away',
                   r'^pagehintd: lost libvirtd .*; serving 3 domains on, reconnecting$')
        lv.start_libvirtd()
        check_said(lv, results, 'the daemon reconnects to a new libvirtd and keeps its domains',
                   r'^pagehintd: connected to qemu:///system: 3 running domains, '
                   r'3 served already$', MISSING_AFTER_S)

        # virt-clone keeps the <shmem> name: the clone must not boot on it
        clone = lv.define('clone', 256, table=before.table)
        p = lv.virsh('start', clone.name, check=False)
        check(results, 'a clone of a running domain, with its table, is refused at start',
              p.returncode and 'is mapped by process' in p.stderr and
              'give each domain a <shmem> name of its own' in p.stderr,
              p.stderr[p.stderr.find('pagehintd:'):].strip() if p.returncode else 'it started')

        before.tell('looked')
        target_through_metadata(lv, before, results)

        hostile.tell('enough')
        ended = wait_for(lambda: hostile.state() == 'shut off', MISSING_AFTER_S)
        check(results, 'the hostile domain ran its plan and powered off', ended,
              '' if ended else 'still %s' % hostile.state())
        results += guestlog.evaluate(hostile.result(), 'libvirt ' + hostile.name, attached=True)
        m = re.search(r'^log: hostile: (tablejunk: .* (\d+) words wrong)$', hostile.tap(), re.M)
        check(results, 'the hostile guest\'s own memory came through its junk intact',
              m and m.group(2) == '0', m.group(1) if m else 'tablejunk said nothing')

        lv.virsh('destroy', after.name)
        check_said(lv, results, 'a destroyed domain is no longer served',
                   r'^pagehintd: domain %s: no longer served: it stopped$'
                   % re.escape(after.name))
        check_metrics(lv, results, 'once one is destroyed', (before,), gone=(after,))
        # only now may the first domain end its plan: the metrics wanted it
        before.tell('dropped')
        # destroyed in the middle of its plan: what it said so far
        tap, console = after.tap(), read(os.path.join(after.run_dir, 'console.log'))
        results += guestlog.guest_tests(tap)
        check(results, '%s attached in each boot' % after.name,
              console.count(guestlog.ATTACHED) == 2,
              '"%s" %d times' % (guestlog.ATTACHED, console.count(guestlog.ATTACHED)))
        trouble = guestlog.kernel_trouble(console)
        check(results, '%s: no oops or warning' % after.name, not trouble, ' / '.join(trouble))
        check(results, '%s rebooted once and held in its second boot' % after.name,
              after.tap().count('plan: start ') == 2 and 'test: ok first-boot' in after.tap(),
              'plan started %d times' % after.tap().count('plan: start '))

        ended = wait_for(lambda: before.state() == 'shut off', MISSING_AFTER_S)
        check(results, '%s ran its plan and powered off' % before.name, ended,
              '' if ended else 'still %s' % before.state())
        # attached twice: at boot, and once its <shmem> was plugged back
        results += guestlog.evaluate(before.result(), 'libvirt ' + before.name, attached=False)
        check_said(lv, results, 'the daemon lets a domain go when it powers off',
                   r'^pagehintd: domain %s: no longer served: it stopped$'
                   % re.escape(before.name))

        rc = lv.stop_daemon()
        check(results, 'the daemon ends with status 0 on SIGTERM', rc == 0,
              'exit status %s' % rc)
    except (OSError, subprocess.SubprocessError) as e:
        check(results, 'the checks ran to their end', False, 'they broke off: %s' % e)
    finally:
        lv.stop()
    return results + budget_pair()
