"""The host files of an OUTDIR, line by line against the forms the compiler writes.

``hosts/<host>/`` holds what an operator runs as root on every GPU server: ``rails.sh``
and ``roce-qos.sh`` are shell scripts, ``nccl.env`` is sourced by a shell (``set -a; .
./nccl.env``) or read by systemd, ``netplan.yaml`` configures the NICs. A pull request
that edits one and hashes it into MANIFEST.json again would otherwise pass validate: a
``curl ... | sh`` appended to rails.sh, an ``LD_PRELOAD=`` in nccl.env. So every line must
be one the templates (templates/hosts/) write, with only numbers, addresses and the NIC
names (``rail<r>``) varying: no shell metacharacter, no other command, no other key.
Comments (``#`` then printable ASCII) are inert in all four.

One regular-expression match per file (a 32k-GPU OUTDIR holds 16,384 host files); the
lines are looked at one by one only to name the first that fails.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..input.problems import Problem
from ..outdir_layout import HOSTS, NCCL_ENV, NETPLAN, RAILS_SH, ROCE_QOS_SH, SLICE_DIR
from ..outputs.clab_exec import CIDR, V4
from .reader import OutdirReader

_NIC = r"rail[0-9]{1,4}"
_N = r"[0-9]{1,10}"
_COMMENT = r"#[\x20-\x7e]*"
_SHELL_TOP = [r"#!/bin/sh", "set -e", _COMMENT]

_FORMS = {
    RAILS_SH: _SHELL_TOP + [
        re.escape("sysctl -q -w net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 "
                  "net.ipv4.conf.all.rp_filter=2"),
        rf"ip link set dev {_NIC} mtu {_N} up",
        rf"ip address replace {CIDR} dev {_NIC}",
        rf"ip route replace (?:{CIDR}|default) via {V4} dev {_NIC}(?: src {V4}| table {_N})?",
        rf"ip route replace {CIDR} dev {_NIC} scope link src {V4} table {_N}",
        rf"ip rule del priority {_N} 2>/dev/null \|\| true",
        rf"ip rule add from {V4} lookup {_N} priority {_N}",
    ],
    ROCE_QOS_SH: _SHELL_TOP + [
        rf"mlnx_qos -i {_NIC} --trust dscp",
        rf"mlnx_qos -i {_NIC} --dscp2prio set,{_N},[0-7]",
        rf"mlnx_qos -i {_NIC} --pfc [01](?:,[01]){{7}}",
        rf"echo 1 > /sys/class/net/{_NIC}/ecn/roce_(?:np|rp)/enable/[0-7]",
        rf"echo {_N} > /sys/class/net/{_NIC}/ecn/roce_np/(?:cnp_dscp|cnp_802p_prio)",
        rf"dev=\$\(ls /sys/class/net/{_NIC}/device/infiniband\)",
        r'cma_roce_mode -d "\$dev" -p 1 -m 2',
        rf'cma_roce_tos -d "\$dev" -t {_N}',
        rf'echo {_N} > "/sys/class/infiniband/\$dev/tc/1/traffic_class"',
    ],
    NCCL_ENV: [
        _COMMENT,
        rf"NCCL_(?:CROSS_NIC|P2P_PXN_LEVEL|PXN_DISABLE|IB_GID_INDEX|IB_TC)={_N}",
        r"NCCL_IB_HCA==mlx5_[0-9]{1,4}:1(?:,mlx5_[0-9]{1,4}:1)*",
        rf"NCCL_SOCKET_IFNAME=={_NIC}",
    ],
    NETPLAN: [
        _COMMENT,
        "network:",
        "  version: 2",
        "  renderer: networkd",
        "  ethernets:",
        rf"    {_NIC}:",
        rf"      mtu: {_N}",
        rf"      addresses: \[{CIDR}\]",
        "      routes:",
        rf"        - to: (?:{CIDR}|default)",
        rf"          via: {V4}",
        "          scope: link",
        rf"          table: {_N}",
        "      routing-policy:",
        rf"        - from: {V4}/32",
        rf"          priority: {_N}",
    ],
}
_LINE = {name: re.compile("|".join(f"(?:{f})" for f in forms)) for name, forms in _FORMS.items()}
_FILE = {name: re.compile(f"(?:(?:{line.pattern})\n)*") for name, line in _LINE.items()}
_HINT = "the compiler never writes it; recompile the design (an operator runs this file as root on the server)"


def host_file_kind(rel: str) -> "str | None":
    """The file name of `rel` when it lies in a host's folder ((lab/)hosts/<host>/<name>), else None."""
    parts = rel.split("/")
    if parts[0] == SLICE_DIR:
        parts = parts[1:]
    return parts[2] if len(parts) == 3 and parts[0] == HOSTS else None


def check_host_file(name: str, text: str, where: str) -> list[Problem]:
    """Problems of one host file (`name`: its file name, `where`: its path as shown)."""
    line_form = _LINE.get(name)
    if line_form is None:
        return [Problem("", f"is not a file the compiler writes in a host's folder (it writes {', '.join(sorted(_FORMS))})",
                        _HINT, None, where)]
    if _FILE[name].fullmatch(text):
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline that ends the file
    for n, line in enumerate(lines, 1):
        if not line_form.fullmatch(line):
            return [Problem("", f"{line[:80]!r} is not a line the compiler writes in {name}", _HINT, n, where)]
    return [Problem("", "does not end with a newline, as every file the compiler writes does", _HINT, None, where)]


def check_hosts(reader: OutdirReader, rels: Iterable[str]) -> list[Problem]:
    """Every host file among `rels` (paths below the reader's OUTDIR), read through it."""
    out: list[Problem] = []
    for rel, name in sorted((r, host_file_kind(r)) for r in rels):
        text = reader.read_text(rel) if name else None
        if text is not None:
            out += check_host_file(name, text, reader.where(rel))
    return out


__all__ = ["check_host_file", "check_hosts", "host_file_kind"]
