"""Small designs covering both vendors x both rail modes x one- and two-tier rails."""

from __future__ import annotations

BASE = """name: {name}
topology: {topology}
hb_domain: {{size: 2, count: {count}, gbps: 3600}}
nic: {{gbps: 400}}
switch: {{radix: {radix}, platform: {platform}}}
rail: {{mode: {mode}}}
"""

# case name -> design text
CASES = {}
for platform in ("sonic", "eos"):
    CASES[f"{platform}-l2-1tier"] = BASE.format(name=f"{platform[0]}l1", topology="rail-only", count=3, radix=4, platform=platform, mode="l2")
    CASES[f"{platform}-routed-1tier"] = BASE.format(name=f"{platform[0]}r1", topology="rail-only", count=3, radix=4, platform=platform, mode="routed")
    CASES[f"{platform}-routed-2tier"] = BASE.format(name=f"{platform[0]}r2", topology="rail-only", count=6, radix=4, platform=platform, mode="routed")
CASES["sonic-baseline-2tier"] = BASE.format(name="sb2", topology="rail-optimized", count=4, radix=4, platform="sonic", mode="routed")
# SONiC leaves under EOS spines: eBGP across vendors.
CASES["mixed-routed-2tier"] = BASE.format(name="mx2", topology="rail-only", count=6, radix=4, platform="sonic",
                                          mode="routed").replace("platform: sonic}", "platform: sonic, platform_by_tier: {2: eos}}")

# Both vendors with a management plane (docs/management.md): users by SHA-512 hash and by key.
MGMT = """management:
  pool: 192.168.100.0/24
  gateway: 192.168.100.1
  ntp: [192.0.2.1, 192.0.2.2]
  syslog: [192.0.2.3]
  dns: [192.0.2.53]
  tacacs: [192.0.2.49]
  gnmi: true
  users:
    - {name: netops, role: network-admin, sha512: "$6$railonlysalt0001$XpJUZ2GBYrUOtLdsK/BO3aghgmYCL9Y/c1iP2TPprCjp5kg2NKrnBzw7OXIyH8c3sMx14sME9FIBpnflRZnDq0"}
    - {name: viewer, role: network-operator, ssh_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f ops@example"}
"""
CASES["mixed-mgmt-2tier"] = CASES["mixed-routed-2tier"].replace("name: mx2", "name: mm2") + MGMT


def compiled(case: str) -> dict[str, bytes]:
    from railonly.fabric.compiler import compile_design
    from railonly.fabric.design.design import parse_design

    _, files = compile_design(parse_design(CASES[case], f"{case}.yml"))
    return files


def config_files(files: dict[str, bytes]) -> dict[str, bytes]:
    return {p: b for p, b in files.items() if p.startswith(("configs/", "hosts/"))}
