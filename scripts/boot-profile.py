#!/usr/bin/env python3
"""Where a machine's boot time goes, per role and per step (docs/benchmarks.md).

Reads the machine logs of one `make e2e-cluster` run (logs/<instance>/journal.log,
or console.log when the journal is not there yet) and prints, per role, each
machine's seconds per step, then a Markdown table of the ranges: etcd members,
controllers and workers. Every line kube-aws-node writes carries the seconds
since its machine started ("kube-aws-node[etcd]  18.6s boot: ..."); a step
lasts from its runcmd line to the next one, "before boot" is everything before
the userdata is fetched (the machine's start, cloud-init, the bootstrap's
download of kube-aws-node).

    KUBE_AWS_E2E_KEEP_LOGS=1 make e2e-cluster RUN=TestCluster/pods_assume
    scripts/boot-profile.py /var/tmp/kube-aws-e2e/run-<id>
"""
import glob
import os
import re
import sys
from collections import OrderedDict, defaultdict

STEP = re.compile(r'kube-aws-node\[([a-z0-9-]+)\]\s+([0-9.]+)s (\S+): (.*)$')
DURATION = re.compile(r' in ([0-9.]+)(ms|s)$')
WAITED = re.compile(r'\(waited ([0-9.]+)(ms|s)\)')
BEFORE = 'before boot (machine, cloud-init, bootstrap, userdata)'
ROWS = [BEFORE, 'write_files', 'volumes', 'secrets', 'artifacts',
        '  artifacts: binaries all in', '  artifacts: first image began', '  artifacts: images all in',
        'certificates', 'dns', 'units (systemctl)', 'addons', 'wait',
        '  waiting for the API server (addons, wait-api)', 'goal (total)']
GROUPS = OrderedDict([('etcd', ['etcd']), ('controllers', ['controller']), ('workers', None)])


def seconds(value, unit):
    return float(value) / (1000 if unit == 'ms' else 1)


def profile(path):
    """One machine's role and its seconds per row."""
    role, cur, done = None, None, None
    seg = OrderedDict()  # step -> [start, end]
    marks = {}
    for line in open(path, errors='replace'):
        m = STEP.search(line)
        if not m:
            continue
        role, t, who, msg = m.group(1), float(m.group(2)), m.group(3), m.group(4)
        if who == 'boot' and msg.startswith('userdata s3://') and BEFORE not in seg:
            seg[BEFORE] = [0, t]
            cur = 'write_files'
            seg[cur] = [t, None]
        run = re.match(r'runcmd\[\d+\]: (.*)', msg) if who == 'boot' else None
        if run:
            cmd = run.group(1)
            name = cmd.split()[1] if cmd.startswith('kube-aws-node ') else 'units (systemctl)'
            if cur and seg[cur][1] is None:
                seg[cur][1] = t
            if name in seg:  # systemctl's lines make one step
                seg[name][1] = None
            else:
                seg[name] = [t, None]
            cur = name
        if who == 'boot' and msg.startswith('done in'):
            if cur and seg[cur][1] is None:
                seg[cur][1] = t
            done = t
        if who == 'artifacts' and ': installed ' in msg:
            marks['last binary'] = t
        if who == 'artifacts' and ': imported ' in msg:
            marks['last image'] = t
            d = DURATION.search(msg)
            if d:
                marks['first image'] = min(marks.get('first image', t), t - seconds(*d.groups()))
        w = WAITED.search(msg)
        if w and who in ('addons', 'wait-api') and 'API server' in msg:
            marks['api'] = seconds(*w.groups())
    if role is None or done is None:
        return None, {}
    rows = OrderedDict((k, v[1] - v[0]) for k, v in seg.items() if v[1] is not None)
    if 'artifacts' in seg:
        start = seg['artifacts'][0]
        for mark, row in [('last binary', '  artifacts: binaries all in'),
                          ('first image', '  artifacts: first image began'),
                          ('last image', '  artifacts: images all in')]:
            if mark in marks:
                rows[row] = max(0.0, marks[mark] - start)
    if 'api' in marks:
        rows['  waiting for the API server (addons, wait-api)'] = marks['api']
    rows['goal (total)'] = done
    return role, rows


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    run = sys.argv[1]
    roles = defaultdict(list)
    for folder in sorted(glob.glob(os.path.join(run, 'logs', '*'))):
        path = os.path.join(folder, 'journal.log')
        if not os.path.exists(path):
            path = os.path.join(folder, 'console.log')
        role, rows = profile(path)
        if role:
            roles[role].append((os.path.basename(folder), rows))
    if not roles:
        sys.exit('%s: no machine logs with kube-aws-node lines' % run)
    for role, machines in sorted(roles.items()):
        print('%s (%d):' % (role, len(machines)))
        for row in ROWS:
            vals = [rows[row] for _, rows in machines if row in rows]
            if vals:
                print('  %-50s %s' % (row, '  '.join('%5.1f' % v for v in vals)))
    print()
    groups = OrderedDict((g, [r for r in roles if (r in rs if rs else r.startswith('nodepool-'))])
                         for g, rs in GROUPS.items())
    print('| step (seconds) | ' + ' | '.join('%s (%d)' % (g, sum(len(roles[r]) for r in rs))
                                           for g, rs in groups.items()) + ' |')
    print('|---|' + '---:|' * len(groups))
    for row in ROWS:
        cells = []
        for rs in groups.values():
            vals = [rows[row] for r in rs for _, rows in roles[r] if row in rows]
            if not vals:
                cells.append('')
            elif max(vals) - min(vals) < 0.05:
                cells.append('%.1f' % min(vals))
            else:
                cells.append('%.1f-%.1f' % (min(vals), max(vals)))
        if any(cells):
            print('| %s | %s |' % (row.strip(), ' | '.join(cells)))


if __name__ == '__main__':
    main()
