"""The OUTDIR's file names, defined once: the producers, the writer, the untrusted reader,
validate, the lab, push and the CLI name every OUTDIR file through here.

Pure data and path joins; imports nothing of railonly, so every room of fabric may use it
(the file names are written by devices/, cost/ and outputs/, which sit above outdir/).
Paths are relative to OUTDIR and '/'-separated, as MANIFEST.json lists them.
tests/core/test_outdir_names.py fails on a product module that spells one of these names.
"""

from __future__ import annotations

from typing import Iterable

MANIFEST = "MANIFEST.json"  # every file's sha256; marks a railonly OUTDIR
FABRIC_JSON = "fabric.json"  # the fabric graph (read only through its one reader)
README = "README.md"
TOPOLOGY_SVG = "topology.svg"
CABLING_CSV = "cabling.csv"
BOM_CSV = "bom.csv"
BOM_BUILDOUT_CSV = "bom-buildout.csv"  # the growth step's bill, when the design has one
NETBOX_DEVICES_CSV = "netbox_devices.csv"
NETBOX_INTERFACES_CSV = "netbox_interfaces.csv"
NETBOX_CABLES_CSV = "netbox_cables.csv"
CLAB_SUFFIX = ".clab.yml"  # <lab>.clab.yml: the lab topology (containerlab's format)
CLABERNETES_SUFFIX = ".clabernetes.yaml"  # <lab>.clabernetes.yaml: the same lab for Kubernetes

CONFIGS = "configs"  # configs/<switch>/: each switch's files
HOSTS = "hosts"  # hosts/<server>/: each server's files
SLICE_DIR = "lab"  # lab/: a lab slice's own artifacts (every producer, on the sliced design)

# a switch's files, in configs/<switch>/
CONFIG_DB = "config_db.json"  # SONiC
FRR_CONF = "frr.conf"  # SONiC's FRR (unified mode, what railonly writes)
SONIC_SPLIT_FRR = ("zebra.conf", "staticd.conf", "bgpd.conf")  # FRR in SONiC's split mode
SONIC_FILES = (CONFIG_DB, FRR_CONF, *SONIC_SPLIT_FRR)  # every file a SONiC switch reads (what push sends)
STARTUP_CONFIG = "startup-config"  # EOS

# a server's files, in hosts/<server>/
NETPLAN = "netplan.yaml"
RAILS_SH = "rails.sh"
NCCL_ENV = "nccl.env"
ROCE_QOS_SH = "roce-qos.sh"

# where a switch itself keeps the files (the lab's containers and push write them there)
SONIC_CONFIG_DB_PATH = "/etc/sonic/" + CONFIG_DB
SONIC_FRR_CONF_PATH = "/etc/frr/" + FRR_CONF
SONIC_CONTAINER_CONFIG_DB = "/var/sonic/" + CONFIG_DB  # where the SONiC container image reads it


def main_config(platform: str | None) -> str:
    """The file a switch of `platform` boots from."""
    return STARTUP_CONFIG if platform == "eos" else CONFIG_DB


def switch_dir(switch: str) -> str:
    return f"{CONFIGS}/{switch}"


def switch_file(switch: str, name: str) -> str:
    return f"{CONFIGS}/{switch}/{name}"


def host_file(host: str, name: str) -> str:
    return f"{HOSTS}/{host}/{name}"


def clab_yml(lab: str) -> str:
    return lab + CLAB_SUFFIX


def clabernetes_yaml(lab: str) -> str:
    return lab + CLABERNETES_SUFFIX


def folders_of(paths: "Iterable[str]") -> set[str]:
    """Every folder holding one of `paths` (relative, '/'-separated), and its parents ('' for
    the top left out)."""
    every: set[str] = set()
    for path in paths:
        d = path.rpartition("/")[0]
        while d and d not in every:
            every.add(d)
            d = d.rpartition("/")[0]
    return every
