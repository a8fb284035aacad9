"""The grader's own files, checked after graded processes and restored if changed (grader).

With namespaces (read-only binds) or Landlock a graded process cannot write outside its
scratch folder at all; this check is the last line of defence, run after every graded process
on machines with neither (and there the only one), at most once a second and after the last
process where the walls stand (parent.WALLED_GUARD_EVERY): it compares size, mtime, inode
and ctime, so no write goes unseen (ctime cannot be set back by a process), keeps the bytes of
course_lib (answer key included) and of every output file the grader wrote, and puts back
anything a graded process changed, added or deleted.
"""

import os
from pathlib import Path


def _files(root: Path) -> dict:
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            try:
                st = path.stat()
            except OSError:
                continue
            out[path] = _stamp(st)
    return out


class Guard:
    """Snapshot of protected trees (bytes kept) and
    of output files (the grader knows their content)."""

    def __init__(self, trees: list, owned_dirs: list = ()):
        self.trees = [Path(t) for t in trees]
        self.owned_dirs = [Path(d) for d in owned_dirs]
        self.stats, self.content = {}, {}
        for tree in self.trees:
            for path, stat in _files(tree).items():
                try:
                    self.content[path] = path.read_bytes()
                    self.stats[path] = stat
                except OSError:
                    pass
        self.outputs = {}  # path -> (stat, callable returning the text it must hold)
        for folder in self.owned_dirs:  # what earlier runs wrote there is ours too
            for path, stat in (_files(folder) if folder.exists() else {}).items():
                data = path.read_bytes()
                self.outputs[path] = (stat, lambda data=data: data)

    def wrote(self, path: Path, expected) -> None:
        """The grader just wrote `path`; `expected()` gives its content if it must be restored."""
        st = Path(path).stat()
        self.outputs[Path(path)] = (_stamp(st), expected)

    def check(self, restore_trees: bool = True) -> list:
        """Paths changed since the last check; output files are restored, and the protected
        trees too unless `restore_trees` is False (then their new state is accepted: the
        change cannot have come from a confined graded process, e.g. someone edited a file)."""
        changed = []
        for tree in self.trees:
            now = _files(tree)
            for path, stat in now.items():
                if path not in self.stats:
                    changed.append(path)
                    if restore_trees:
                        path.unlink(missing_ok=True)
                    else:
                        self._accept(path)
                elif stat != self.stats[path]:
                    changed.append(path)
            for path in list(self.stats):
                if now.get(path) != self.stats[path]:
                    if path not in changed:
                        changed.append(path)
                    if not restore_trees:
                        self._accept(path)
                        continue
                    self._restore(path, self.content[path])
                    self.stats[path] = _files_one(path)
        for folder in self.owned_dirs:  # files the grader did not write there are not ours
            for path in _files(folder) if folder.exists() else ():
                if path not in self.outputs and not path.name.startswith("."):
                    changed.append(path)
                    path.unlink(missing_ok=True)
        for path, (stat, expected) in list(self.outputs.items()):
            if _files_one(path) != stat:
                changed.append(path)
                text = expected()
                self._restore(path, text.encode() if isinstance(text, str) else text)
                self.outputs[path] = (_files_one(path), expected)
        return changed

    def _accept(self, path: Path) -> None:
        try:
            self.content[path], self.stats[path] = path.read_bytes(), _files_one(path)
        except OSError:
            self.content.pop(path, None)
            self.stats.pop(path, None)

    @staticmethod
    def _restore(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.restore{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)


def _stamp(st) -> tuple:
    """What changes with any write: size, mtime, inode and ctime (which no process can set back:
    writing or `os.utime` both move it to now)."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _files_one(path: Path):
    try:
        return _stamp(path.stat())
    except OSError:
        return None
