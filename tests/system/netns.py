"""netns.py -- a network of its own for each host of a test stack, so
that one host can be cut off the way a network partition cuts a VM.

One Linux bridge in the root namespace holds the subnet's first address
(cairnd listens there; the writers and checks, which stay in the root
namespace, reach the engines through it), and each host is a network
namespace joined to the bridge by a veth pair, with an address of the
subnet (the agent's --address, which its engines bind). Two cuts:

  cut(host)          its link down: nothing reaches it, it reaches nothing
                     (the other hosts, cairnd, the applications)
  split(host)        it and the other hosts no longer reach each other
                     (a neighbour entry to an address nobody has, on both
                     sides: their frames go nowhere, silently), while
                     cairnd and the applications still reach it

Needs root and a working `ip netns` (usable() says why not). Names carry
the pid of the run (bridge cbrPID, veths cvPID-N, namespaces cairnPID-HOST),
and everything made is removed by remove(), at exit too; a later run
removes what a run killed with SIGKILL left behind.
"""

import atexit
import ipaddress
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

IP = shutil.which("ip") or "/usr/sbin/ip"
SUBNETS = ipaddress.ip_network("10.213.0.0/16")  # one /24 of it per run
FIRST_HOST = 11            # hosts get .11, .12, ... of the /24; the bridge .1
NOWHERE = "02:ca:19:00:00:00"  # a locally administered MAC no interface has

_usable = None


class NetnsError(Exception):
    """An `ip` command failed."""


def ip(*args):
    """Run `ip ARGS...`; its stdout. Raises NetnsError with its stderr."""
    r = subprocess.run([IP, *[str(a) for a in args]], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        raise NetnsError(f"ip {' '.join(str(a) for a in args)}: {r.stderr.strip()}")
    return r.stdout


def usable():
    """(True, "") when this process can make network namespaces, else
    (False, why): it needs root, iproute2, and a kernel that lets it add
    one (tried once, with a namespace removed at once)."""
    global _usable
    if _usable is None:
        if os.geteuid() != 0:
            _usable = (False, "not root")
        elif not os.access(IP, os.X_OK):
            _usable = (False, f"no {IP} (iproute2)")
        else:
            probe = f"cairn{os.getpid()}-probe"
            try:
                ip("netns", "add", probe)
                ip("netns", "del", probe)
                _usable = (True, "")
            except (NetnsError, OSError, subprocess.SubprocessError) as e:
                _usable = (False, f"`ip netns` does not work here ({e})")
    return _usable


@dataclass
class Host:
    name: str
    netns: str      # the namespace its agent and engines run in
    address: str    # its address on the bridge
    veth: str       # its link's end in the root namespace, on the bridge
    peer: str       # the other end, in its namespace


class Network:
    """The bridge and the hosts' namespaces of one run."""

    def __init__(self):
        self.pid = os.getpid()
        self.hosts = {}
        self.bridge = f"cbr{self.pid}"
        self._removed = False
        remove_stale()
        self.subnet = free_subnet()
        self.gateway = str(self.subnet[1])
        atexit.register(self.remove)
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{self.gateway}/{self.subnet.prefixlen}", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")

    def add_host(self, name):
        """A namespace for host `name` on the bridge, its link up: its Host."""
        i = len(self.hosts) + 1
        h = Host(name, f"cairn{self.pid}-{name}", str(self.subnet[FIRST_HOST + i - 1]),
                 f"cv{self.pid}-{i}", f"cp{self.pid}-{i}")
        self.hosts[name] = h
        ip("netns", "add", h.netns)
        ip("link", "add", h.veth, "type", "veth", "peer", "name", h.peer, "netns", h.netns)
        ip("link", "set", h.veth, "master", self.bridge, "up")
        ip("-n", h.netns, "link", "set", "lo", "up")
        ip("-n", h.netns, "addr", "add", f"{h.address}/{self.subnet.prefixlen}", "dev", h.peer)
        ip("-n", h.netns, "link", "set", h.peer, "up")
        return h

    def host(self, name):
        return self.hosts[name]

    def cut(self, h):
        """h's link down: cut off from everything."""
        ip("link", "set", h.veth, "down")

    def mend(self, h):
        ip("link", "set", h.veth, "up")

    def split(self, h):
        """h and every other host lose each other; cairnd and the
        applications, in the root namespace, still reach all of them."""
        for other in self._others(h):
            ip("-n", h.netns, "neigh", "replace", other.address, "lladdr", NOWHERE,
               "nud", "permanent", "dev", h.peer)
            ip("-n", other.netns, "neigh", "replace", h.address, "lladdr", NOWHERE,
               "nud", "permanent", "dev", other.peer)

    def unsplit(self, h):
        """Undo split(h): the neighbour entries go, ARP finds the real ones."""
        for other in self._others(h):
            ip("-n", h.netns, "neigh", "del", other.address, "dev", h.peer)
            ip("-n", other.netns, "neigh", "del", h.address, "dev", other.peer)

    def _others(self, h):
        return [o for o in self.hosts.values() if o is not h]

    def remove(self):
        """Remove the veths (each takes its peer along), the namespaces and
        the bridge, once; what is already gone is not an error. Processes
        still in a namespace keep it alive, without its name, until they
        end."""
        if self._removed:
            return
        self._removed = True
        for h in self.hosts.values():
            _quietly("link", "del", h.veth)
            _quietly("netns", "del", h.netns)
        _quietly("link", "del", self.bridge)


def _quietly(*args):
    try:
        ip(*args)
    except (NetnsError, OSError, subprocess.SubprocessError):
        pass


def free_subnet():
    """A /24 of SUBNETS no address or route of the root namespace is in
    (drawn from the pid, so that runs at once take different ones)."""
    taken = [ipaddress.ip_interface(w).network
             for w in re.findall(r"inet (\S+)", ip("-4", "-o", "addr"))]
    taken += [ipaddress.ip_network(w.split()[0])
              for w in ip("-4", "route").splitlines() if w and not w.startswith("default")]
    nets = list(SUBNETS.subnets(new_prefix=24))
    start = os.getpid() % len(nets)
    for net in nets[start:] + nets[:start]:
        if not any(net.overlaps(t) for t in taken):
            return net
    raise NetnsError(f"no free /24 in {SUBNETS}")


def remove_stale():
    """Remove the namespaces and links a run whose pid is gone left behind
    (one killed with SIGKILL cleans nothing)."""
    names = re.findall(r"^(\S+)", ip("netns", "list"), re.M)
    links = [n.split("@")[0] for n in re.findall(r"^\d+: (\S+):", ip("-o", "link"), re.M)]
    for kind, found in (("netns", names), ("link", links)):
        for name in found:
            m = re.match(r"(cairn|cbr|cv)(\d+)(-|$)", name)
            if m and not os.path.exists(f"/proc/{m.group(2)}"):
                _quietly(*(("netns", "del", name) if kind == "netns" else ("link", "del", name)))
