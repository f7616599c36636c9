# SPDX-License-Identifier: GPL-2.0
"""Benchmark measurements kept per commit.

All of `make bench` takes hours on a 2-core host under TCG, more than one
sitting.  Each measurement (one boot of a setup, one density point, one
section) is kept under build/bench-results/COMMIT/ once it worked, and a
later `make bench` at the same commit takes it from there instead of
measuring it again: an interrupted bench goes on where it stopped, and
docs/bench.md stays the record of one commit, which it names.  A tree with
changes keeps nothing (its measurements are of no commit; the bench's own
outputs, docs/bench.md and its plots, do not count as changes), and
BENCH_FRESH=1 measures everything again.  What a measurement depends on
beyond the commit (the kernel variant, a duration, a limit) is part of
its key.
"""

import json
import os
import re
import subprocess

import vm

RESULTS = os.path.join(vm.BUILD, 'bench-results')


# what the bench itself writes: a bench that was stopped leaves them changed
OUTPUTS = (':!docs/bench.md', ':!docs/bench-*.svg')


def git(*args):
    out = subprocess.run(['git', '-C', vm.TOP] + list(args), capture_output=True, text=True)
    if out.returncode:
        print('bench: git %s: %s' % (' '.join(args), out.stderr.strip()), flush=True)
        return None
    return out.stdout.strip()


def commit(_at=[]):
    """The commit of the tree, with '-dirty' when it has changes: as it was
    at the first call, so that one run keeps all it measures in one place."""
    if not _at:
        head = git('rev-parse', '--short=12', 'HEAD')
        changes = git('status', '--porcelain', '--untracked-files=no', '--', '.', *OUTPUTS)
        _at.append('unknown-dirty' if head is None or changes is None else
                   head + ('-dirty' if changes else ''))
    return _at[0]


def once(key, measure, worked=lambda result: True, **params):
    """MEASURE()'s result for KEY with PARAMS at this commit: kept from an
    earlier run when there is one, else measured (and kept if WORKED says
    it did).  The result must be JSON: what is kept is what is given back."""
    at = commit()
    name = '/'.join([key] + ['%s=%s' % kv for kv in sorted(params.items())])
    path = os.path.join(RESULTS, at, re.sub(r'[^A-Za-z0-9.=-]+', '_', name) + '.json')
    if not at.endswith('-dirty') and os.environ.get('BENCH_FRESH') != '1' and \
            os.path.exists(path):
        with open(path) as f:
            print('bench: %s: kept from an earlier run at %s' % (key, at), flush=True)
            return json.load(f)
    result = json.loads(json.dumps(measure()))
    if not at.endswith('-dirty') and worked(result):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + '.new', 'w') as f:
            json.dump(result, f)
        os.rename(path + '.new', path)
    return result
