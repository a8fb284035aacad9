"""Huge pages for the zygote's heap: every fork and every exit of a graded process gets cheaper
(zygote).

A fork copies one page-table entry per 4 KiB page the zygote has written (about 260 MB after its
imports and warm-ups: ~65,000 entries), and each exit of a forked process unmaps them all again;
the relay of a namespaced process pays the same once more. Mapped as 2 MiB pages, the same memory
is ~130 entries. Two steps, both best effort and both in the zygote only: glibc's malloc heap is
asked for transparent huge pages from the start (`TUNABLE`, set in the zygote's environment by the
grader and taken out again by the zygote, so no graded process inherits it), and, once the
warm-ups are done, the rest of its anonymous memory (Python's arenas, torch's allocations) is
collapsed into huge pages (MADV_COLLAPSE, Linux 6.1+). A graded process that writes to a shared
huge page gets a private copy of that 4 KiB page only, as before. Where the kernel has no
transparent huge pages nothing changes.
"""

import ctypes
import os

TUNABLE = "glibc.malloc.hugetlb=1"  # madvise(MADV_HUGEPAGE) on what glibc's malloc maps
MADV_COLLAPSE = 25
PMD_SIZE_FILE = "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"
MIN_SMALL_PAGES = 8 << 20  # a region with less than this in small pages is left as it is


def with_tunable(env: dict) -> dict:
    """`env` with glibc's malloc asked for huge pages (for the zygote's interpreter)."""
    tunables = [t for t in env.get("GLIBC_TUNABLES", "").split(":") if t]
    return dict(env, GLIBC_TUNABLES=":".join([*tunables, TUNABLE]))


def drop_tunable(environ=os.environ) -> None:
    """Take the tunable out of this process's environment (read at start; children need not)."""
    rest = [t for t in environ.get("GLIBC_TUNABLES", "").split(":") if t and t != TUNABLE]
    if rest:
        environ["GLIBC_TUNABLES"] = ":".join(rest)
    else:
        environ.pop("GLIBC_TUNABLES", None)


def huge_page_size() -> int:
    """The kernel's transparent huge page size in bytes, 0 where it has none."""
    try:
        with open(PMD_SIZE_FILE) as f:
            return int(f.read())
    except (OSError, ValueError):
        return 0


def small_page_regions(smaps: str = "/proc/self/smaps") -> list:
    """(start, end, bytes in small pages) of this process's private anonymous read-write
    mappings (the heap, Python's arenas, torch's allocations)."""
    regions, current = [], None
    with open(smaps) as f:
        for line in f:
            name, _, rest = line.partition(" ")
            if "-" in name and not name.endswith(":"):
                fields = line.split()
                start, end = (int(x, 16) for x in fields[0].split("-"))
                path = fields[5] if len(fields) > 5 else ""
                anonymous = fields[1].startswith("rw") and fields[1][3] == "p"
                current = [start, end, 0, 0] if anonymous and path in ("", "[heap]") else None
                if current is not None:
                    regions.append(current)
            elif current is not None and name in ("Anonymous:", "AnonHugePages:"):
                current[2 if name == "Anonymous:" else 3] = int(rest.split()[0]) * 1024
    return [(start, end, anon - huge) for start, end, anon, huge in regions]


def collapse() -> int:
    """Collapse this process's written anonymous memory into huge pages; the bytes asked for."""
    size = huge_page_size()
    if not size:
        return 0
    madvise = ctypes.CDLL(None, use_errno=True).madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    try:
        regions = small_page_regions()
    except OSError:  # no /proc: nothing to collapse
        return 0
    asked = 0
    for start, end, small in regions:
        first, last = (start + size - 1) // size * size, end // size * size
        if small < MIN_SMALL_PAGES or last - first < size:
            continue
        if madvise(first, last - first, MADV_COLLAPSE) == 0:
            asked += last - first
    return asked
