#!/usr/bin/python3
"""closure.py: list the files to copy into the VM image (helper of tests/vm/mkimage).

stdin: host paths (files or symlinks, one per line) that the image must contain.
stdout: the same paths in canonical merged-/usr form, without the leading '/', plus every
symlink-chain target and, for ELF files, the transitive DT_NEEDED closure resolved the way ld.so
would on this host (RUNPATH/RPATH, then the ldconfig cache, then the default directories).
Symlinks are kept as symlinks (DPDK loads every *.so* in its PMD directory; dereferencing would
load each driver three times).

Why not ldd: it runs the dynamic loader once per file, ~75 ms each under this machine's
virtualisation, i.e. minutes for DPDK's 700 libraries and PMDs; reading the ELF headers is ~1 s.
Unresolvable libraries are reported on stderr (exit status stays 0: the image can still be used).
"""
import os
import struct
import subprocess
import sys

DEFAULT_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib", "/usr/lib64"]


def ldconfig_cache():
    """soname -> path for x86-64 libraries, from `ldconfig -p` (first entry wins, like ld.so)."""
    cache = {}
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return cache
    for line in out.splitlines()[1:]:
        line = line.strip()
        if " => " not in line or "x86-64" not in line:
            continue
        left, path = line.split(" => ", 1)
        cache.setdefault(left.split(" ", 1)[0], path.strip())
    return cache


def canon(path):
    """Resolve the directory part only, so a symlink itself stays a symlink."""
    d, b = os.path.split(path)
    return os.path.join(os.path.realpath(d), b)


def elf_dynamic(path):
    """(needed, search_dirs) of a 64-bit little-endian ELF file, or None if it is not one."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shoff == 0 or shnum == 0 or shoff + shnum * shentsize > len(data):
        return None
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    needed, dirs = [], []
    origin = os.path.dirname(os.path.realpath(path))
    for s in secs:
        if s[1] != 6:  # SHT_DYNAMIC
            continue
        off, size, link = s[4], s[5], s[6]
        stroff = secs[link][4]

        def string(o):
            end = data.index(b"\0", stroff + o)
            return data[stroff + o:end].decode("utf-8", "replace")

        for i in range(0, size, 16):
            tag, val = struct.unpack_from("<qQ", data, off + i)
            if tag == 0:
                break
            if tag == 1:  # DT_NEEDED
                needed.append(string(val))
            elif tag in (15, 29):  # DT_RPATH, DT_RUNPATH
                for d in string(val).split(":"):
                    if d:
                        dirs.append(d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin))
    return needed, dirs


def main():
    cache = ldconfig_cache()
    out, seen_files, missing = [], set(), set()
    todo = [l.strip() for l in sys.stdin if l.strip()]
    todo.append("/lib64/ld-linux-x86-64.so.2")
    while todo:
        p = todo.pop()
        if not os.path.lexists(p):
            missing.add(p)
            continue
        c = canon(p)
        if c in seen_files:
            continue
        seen_files.add(c)
        out.append(c)
        if os.path.islink(c):
            t = os.readlink(c)
            todo.append(t if t.startswith("/") else os.path.join(os.path.dirname(c), t))
            continue
        dyn = elf_dynamic(c)
        if not dyn:
            continue
        needed, dirs = dyn
        for so in needed:
            if "/" in so:
                todo.append(so)
                continue
            for d in dirs:
                if os.path.exists(os.path.join(d, so)):
                    todo.append(os.path.join(d, so))
                    break
            else:
                if so in cache:
                    todo.append(cache[so])
                else:
                    for d in DEFAULT_DIRS:
                        if os.path.exists(os.path.join(d, so)):
                            todo.append(os.path.join(d, so))
                            break
                    else:
                        missing.add(f"{so} (needed by {c})")
    for m in sorted(missing):
        print(f"closure.py: warning: not found: {m}", file=sys.stderr)
    for c in sorted(out):
        print(c.lstrip("/"))


if __name__ == "__main__":
    main()
