"""disk.py -- a small tmpfs for one host's data dir, so that the chaos
suite can fill it up (the engines' AOF and snapshots, the agent's saved
state) and free it again.

Needs root (mount). The tmpfs is lazily unmounted at the end, or at exit if
the run dies first: the engines may still hold files open then, and the
harness removes the directory under it afterwards.
"""

import atexit
import errno
import os
import subprocess

FILLER = "chaos-filler"
CHUNK = b"\0" * (1 << 20)

_mounted = set()


def mount_tmpfs(path, size_mib):
    """Mount a tmpfs of size_mib MiB on path (created if need be)."""
    os.makedirs(path, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0755", "tmpfs",
                    str(path)], check=True, capture_output=True, timeout=10)
    _mounted.add(str(path))


def unmount(path):
    """Detach the tmpfs on path at once (umount -l), whoever still uses it."""
    if str(path) in _mounted:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=10)
        _mounted.discard(str(path))


def unmount_all():
    for path in list(_mounted):
        unmount(path)


atexit.register(unmount_all)


def fill(path):
    """Write zeros to path/chaos-filler until the file system is full;
    return how many MiB it took."""
    written = 0
    with open(os.path.join(path, FILLER), "wb", buffering=0) as f:
        while True:
            try:
                f.write(CHUNK)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                return written
            written += 1


def free(path):
    """Remove what fill() wrote."""
    try:
        os.unlink(os.path.join(path, FILLER))
    except FileNotFoundError:
        pass
