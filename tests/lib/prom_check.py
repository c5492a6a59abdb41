#!/usr/bin/env python3
"""Strict checker of Prometheus text exposition format 0.0.4, for ibgwd's /metrics.

Reads the exposition on stdin. Checks: every family has exactly one HELP and one TYPE line before its
samples; samples of a family are contiguous; names and label names are valid; label values are
properly quoted and escaped; values parse as floats; counters end in _total; no sample line repeats.
Prints "ok: N families, M samples" or the first problems, and exits 0 or 1.
Usage: prom_check.py [--require NAME ...] < metrics.txt
"""
import re
import sys

NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*'
VALUE = r'"(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(rf'^({NAME})(\{{(?:{LABEL}={VALUE}(?:,{LABEL}={VALUE})*)?\}})? (\S+)( -?\d+)?$')


def main():
    required = sys.argv[sys.argv.index('--require') + 1:] if '--require' in sys.argv else []
    errors = []
    help_, type_, done = {}, {}, set()
    current = None
    samples = set()
    n = 0
    for ln, line in enumerate(sys.stdin.read().split('\n'), 1):
        if line == '':
            continue
        if line.startswith('# HELP ') or line.startswith('# TYPE '):
            parts = line.split(' ', 3)
            if len(parts) < 4 or not re.fullmatch(NAME, parts[2]):
                errors.append(f'{ln}: malformed {line!r}')
                continue
            d = help_ if parts[1] == 'HELP' else type_
            if parts[2] in d:
                errors.append(f'{ln}: second {parts[1]} for {parts[2]}')
            if parts[2] in done:
                errors.append(f'{ln}: family {parts[2]} appears twice')
            d[parts[2]] = parts[3]
            if parts[1] == 'TYPE' and parts[3] not in ('counter', 'gauge', 'histogram', 'summary', 'untyped'):
                errors.append(f'{ln}: bad type {parts[3]}')
            if current and current != parts[2]:
                done.add(current)
            current = parts[2]
            continue
        if line.startswith('#'):
            continue
        m = SAMPLE.match(line)
        if not m:
            errors.append(f'{ln}: malformed sample {line!r}')
            continue
        name = m.group(1)
        if name != current:
            errors.append(f'{ln}: sample {name} outside its family block (HELP/TYPE missing or not adjacent)')
        if name not in help_ or name not in type_:
            errors.append(f'{ln}: {name} lacks HELP or TYPE')
        if type_.get(name) == 'counter' and not name.endswith('_total'):
            errors.append(f'{ln}: counter {name} does not end in _total')
        try:
            float(m.group(3))
        except ValueError:
            errors.append(f'{ln}: value {m.group(3)!r} is not a number')
        key = (name, m.group(2) or '')
        if key in samples:
            errors.append(f'{ln}: duplicate sample {line!r}')
        samples.add(key)
        n += 1
    for r in required:
        if r not in type_:
            errors.append(f'required metric {r} missing')
    if n == 0:
        errors.append('no samples at all')
    if errors:
        print('\n'.join(errors[:30]))
        return 1
    print(f'ok: {len(type_)} families, {n} samples')
    return 0


if __name__ == '__main__':
    sys.exit(main())
