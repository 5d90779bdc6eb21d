"""setup.sh installs every Debian package the product and its tests call, and the
example CI workflow runs as root exactly where root is needed (it stopped at its
first step on a fresh runner: ./setup.sh without sudo)."""

from __future__ import annotations

import re

import yaml

from ..conftest import REPO

# program the code runs -> the Debian package that ships it
PROGRAMS = {"ip": "iproute2", "bridge": "iproute2", "tc": "iproute2", "nft": "nftables", "sysctl": "procps",
            "iperf3": "iperf3", "vtysh": "frr", "sshd": "openssh-server", "ssh-keygen": "openssh-client",
            "lldpd": "lldpd", "tcpdump": "tcpdump", "traceroute": "traceroute", "ethtool": "ethtool"}


def _apt_packages() -> set[str]:
    m = re.search(r'^APT_PACKAGES="([^"]+)"', (REPO / "setup.sh").read_text(), re.M)
    assert m, "setup.sh has no APT_PACKAGES line"
    return set(m.group(1).split())


def test_setup_installs_python_venv_and_every_tool_the_code_runs():
    packages = _apt_packages()
    assert {"python3", "python3-venv"} <= packages  # `python3 -m venv` needs both on Debian
    code = "\n".join(p.read_text() for top in ("fabric", "emulation", "railonly")
                     for p in (REPO / top).rglob("*.py"))
    used = {prog for prog in PROGRAMS if re.search(rf'["\'/]{re.escape(prog)}["\']', code)}
    assert {"ip", "tc", "vtysh", "iperf3"} <= used  # the scan finds what it should
    missing = sorted(f"{prog} ({PROGRAMS[prog]})" for prog in used if PROGRAMS[prog] not in packages)
    assert not missing, f"setup.sh does not install: {missing}"


def test_ci_example_runs_root_steps_with_sudo():
    flow = yaml.safe_load((REPO / "labs" / "ci" / "github-actions.yml").read_text())
    steps = [s for job in flow["jobs"].values() for s in job["steps"] if "run" in s]
    needs_root = re.compile(r"(^|\s)(\./setup\.sh|\S*railonly lab (deploy|check|traffic|fault|destroy))")
    for step in steps:
        for line in step["run"].splitlines():
            if needs_root.search(line):
                assert line.strip().startswith("sudo "), f"step {step.get('name')!r} needs root: {line!r}"
    assert any("setup.sh" in s["run"] for s in steps)
