"""Reading what a container reports about itself: posture lines, routes, write attempts.

The route parsing is written apart from sandbox/posture.py on purpose: the tests check
the sandbox with their own reading of the kernel's tables, not with the code under test.
"""

from __future__ import annotations

import json

RTF_UP = 0x0001
RTF_REJECT = 0x0200

# Run inside a container: for each path, try to create a file there and print the
# outcome (`ok` or the errno name); nothing is written outside the probed paths.
WRITE_PROBE = """
import errno, os, sys
for target in sys.argv[1:]:
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        print(target, errno.errorcode[exc.errno])
    else:
        os.close(fd)
        os.unlink(target)
        print(target, "ok")
"""


def posture_rules(output: str) -> set[str]:
    """The rules `python -m sandbox.posture` reported as violated."""
    rules = set()
    for line in output.splitlines():
        if line.startswith("{"):
            rule = json.loads(line)["rule"]
            if rule:
                rules.add(rule)
    return rules


def write_outcomes(output: str) -> dict[str, str]:
    """`{path: "ok" | errno name}` from the output of WRITE_PROBE."""
    outcomes = {}
    for line in output.splitlines():
        path, _, outcome = line.partition(" ")
        outcomes[path] = outcome
    return outcomes


def usable_default_routes(ipv4_table: str, ipv6_table: str) -> list[str]:
    """Default routes that can carry traffic, from /proc/net/route and /proc/net/ipv6_route.

    A default route is one with an all-zero destination and prefix; it can carry traffic
    when it is up and not a reject route (the kernel lists unreachable `::/0` entries on lo).
    """
    found = []
    for line in ipv4_table.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8:
            continue
        iface, destination, flags, mask = fields[0], fields[1], int(fields[3], 16), fields[7]
        if destination == "00000000" and mask == "00000000" and _usable(flags):
            found.append(f"ipv4 default via {fields[2]} dev {iface}")
    for line in ipv6_table.splitlines():
        fields = line.split()
        if len(fields) < 10:
            continue
        destination, prefix, flags, iface = fields[0], fields[1], int(fields[8], 16), fields[9]
        if int(destination, 16) == 0 and prefix == "00" and _usable(flags):
            found.append(f"ipv6 default dev {iface}")
    return found


def _usable(flags: int) -> bool:
    return bool(flags & RTF_UP) and not flags & RTF_REJECT
