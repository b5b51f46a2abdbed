"""procs.py -- the signals the chaos suite sends to processes, with a record
of every process it froze.

A process left stopped would outlive the run in a state no clean-up can
handle gracefully: SIGTERM waits for a SIGCONT that never comes, and the
agents' own shutdown cannot run. So every SIGSTOP goes through freeze(),
which remembers the pid until thaw() is called for it, and thaw_all()
(also run at exit, before the harness's reapers) resumes whatever is
still frozen.
"""

import atexit
import os
import signal
import threading

# Imported first so that their atexit reapers are registered before
# thaw_all: atexit runs handlers last in, first out.
import agents  # noqa: F401
import harness  # noqa: F401

_frozen = set()
_lock = threading.Lock()


def _signal(pid, sig):
    """Send sig to pid; a process that is already gone is not an error."""
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def kill9(pid):
    """SIGKILL one process (an engine's pid, not its group: its agent
    started it in a group of its own, and nothing else is in it)."""
    return _signal(pid, signal.SIGKILL)


def freeze(pids):
    """SIGSTOP every pid, remembering each one until it is thawed."""
    with _lock:
        for pid in pids:
            _frozen.add(pid)
            _signal(pid, signal.SIGSTOP)


def thaw(pids):
    """SIGCONT every pid and forget it."""
    with _lock:
        for pid in pids:
            _signal(pid, signal.SIGCONT)
            _frozen.discard(pid)


def thaw_all():
    """SIGCONT whatever is still frozen (clean-up, interrupted runs)."""
    with _lock:
        pids = list(_frozen)
    thaw(pids)


atexit.register(thaw_all)
