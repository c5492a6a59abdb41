#!/usr/bin/env python3
"""The README's metrics reference, from a live /metrics text (so the docs cannot drift from the code).

  metrics_doc.py table < metrics.txt       prints the Markdown table (one row per family: name, type,
                                           label names seen in its samples, its HELP text)
  metrics_doc.py update README.md < metrics.txt
                                           rewrites the table between README's markers
  metrics_doc.py check README.md < metrics.txt
                                           exits 1 and names the differences when the families between
                                           README's <!-- metrics-reference:begin/end --> markers are not
                                           exactly the live ones

The demo's ibgwd (both sides, both route kinds) is the live source: tests/demo/guest.sh saves its
/metrics, tests/demo/test_demo.sh runs the check.
"""
import re
import sys

BEGIN, END = '<!-- metrics-reference:begin -->', '<!-- metrics-reference:end -->'


def families(text):
    fam = {}  # name -> [type, help, label names]
    order = []
    for line in text.splitlines():
        m = re.match(r'# (HELP|TYPE) (\S+) ?(.*)$', line)
        if m:
            kind, name, rest = m.groups()
            if name not in fam:
                fam[name] = ['', '', set()]
                order.append(name)
            fam[name][0 if kind == 'TYPE' else 1] = rest
            continue
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ', line)
        if m and m.group(1) in fam and m.group(3):
            fam[m.group(1)][2].update(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(3)))
    return [(n, *fam[n]) for n in order]


def table(fams):
    rows = ['| metric | type | labels | meaning |', '|---|---|---|---|']
    for name, typ, hlp, labels in fams:
        hlp = hlp.replace('\\\\', '\\').replace('|', '\\|')
        rows.append(f"| `{name}` | {typ} | {', '.join(sorted(labels))} | {hlp} |")
    return '\n'.join(rows) + '\n'


def main():
    fams = families(sys.stdin.read())
    if not fams:
        sys.exit('metrics_doc: no metric families on stdin')
    if sys.argv[1:2] == ['table']:
        sys.stdout.write(table(fams))
        return
    if sys.argv[1:2] not in (['check'], ['update']) or len(sys.argv) != 3:
        sys.exit(__doc__)
    readme = open(sys.argv[2]).read()
    if BEGIN not in readme or END not in readme:
        sys.exit(f'{sys.argv[2]}: no {BEGIN} ... {END} section')
    before, section = readme.split(BEGIN, 1)
    section, after = section.split(END, 1)
    if sys.argv[1] == 'update':
        with open(sys.argv[2], 'w') as f:
            f.write(before + BEGIN + '\n' + table(fams) + END + after)
        return
    documented = set(re.findall(r'^\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \|', section, re.M))
    live = {f[0] for f in fams}
    problems = [f'undocumented: {n}' for n in sorted(live - documented)]
    problems += [f'documented but not exported: {n}' for n in sorted(documented - live)]
    if problems:
        print('\n'.join(problems))
        print('regenerate: make demo && tests/lib/metrics_doc.py update README.md < build/demo-metrics.txt')
        sys.exit(1)
    print(f'ok: README documents exactly the {len(live)} exported metric families')


if __name__ == '__main__':
    main()
