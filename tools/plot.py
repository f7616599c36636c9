# SPDX-License-Identifier: GPL-2.0
"""Host-resident guest memory over time, drawn by gnuplot (Debian's
gnuplot-nox): an SVG for docs/bench.md and the make run log, and the same
picture in characters for the terminal."""

import os
import subprocess
import tempfile


def held(series, svg=None, columns=0):
    """SERIES: {setup name: [(seconds, MiB held), ...]}.  Writes SVG if
    given; returns the picture COLUMNS characters wide ('' for 0)."""
    with tempfile.TemporaryDirectory(prefix='pagehint-plot-') as d:
        plots = []
        for i, (name, samples) in enumerate(series.items()):
            data = os.path.join(d, '%d.dat' % i)
            with open(data, 'w') as f:
                f.writelines('%.2f %.1f\n' % tuple(sample) for sample in samples)
            plots.append("'%s' using 1:2 with lines lw 2 title '%s'"
                         % (data, name.replace("'", '')))
        common = ["set xlabel 'seconds since QEMU started'",
                  "set ylabel 'host-resident guest memory (MiB)'",
                  'set yrange [0:*]', 'plot ' + ', '.join(plots)]
        script = []
        if svg:
            script += ["set terminal svg size 960,480 dynamic font 'sans,12'",
                       "set output '%s'" % svg, 'set key outside right top', 'set grid'] + common
        if columns:
            script += ['set output', 'set terminal dumb size %d,24' % columns,
                       'set key outside right top', 'unset grid'] + common
        if not script:
            return ''
        out = subprocess.run(['gnuplot'], input='\n'.join(script), text=True, check=True,
                             capture_output=True)
        return out.stdout
