"""Rack-scale HB domains are modelled as their trays (docs/configs.md, "Servers and trays"):
a GB200 NVL72 rack is 18 compute trays of 4 GPUs, and hosts/, NetBox and cabling.csv agree on
which tray holds which NIC."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict

import pytest

from railonly.fabric.compiler import compile_design
from railonly.fabric.design.design import FIELDS, load_design, parse_design
from railonly.fabric.input.problems import InputError

from ..conftest import REPO

# The rack-scale shape of labs/nvl72.yml at a size that compiles in a second: 72 GPUs per
# domain in trays of 4, two racks, one leaf partition per rail.
NVL72 = """name: nvl
hb_domain: {size: 72, count: 2, gbps: 7200, gpus_per_host: 4}
switch: {radix: 64, share_rails: true}
"""


def _csv(files, name):
    return list(csv.DictReader(io.StringIO(files[name].decode())))


@pytest.fixture(scope="module")
def compiled():
    design = parse_design(NVL72, "nvl.yml")
    return design, *compile_design(design)


def test_the_shipped_nvl72_design_is_trays_of_four():
    d = load_design(str(REPO / "labs" / "nvl72.yml"))
    assert (d.hb_size, d.gpus_per_host) == (72, 4)


def test_every_domain_is_18_trays_of_4_nics(compiled):
    design, fab, files = compiled
    nics = defaultdict(set)  # host folder -> NIC names in its netplan
    for path, data in files.items():
        if path.startswith("hosts/") and path.endswith("/netplan.yaml"):
            nics[path.split("/")[1]] = set(re.findall(r"^    (rail\d+):$", data.decode(), re.M))
    assert sorted(nics) == sorted(f"hb{d}-tray{t}" for d in range(2) for t in range(18))
    for host, names in nics.items():
        t = int(host.rsplit("tray", 1)[1])
        assert names == {f"rail{r}" for r in range(4 * t, 4 * t + 4)}, host
        for f in ("rails.sh", "nccl.env"):
            assert f"hosts/{host}/{f}" in files
        env = files[f"hosts/{host}/nccl.env"].decode()
        assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1\n" in env  # the tray's own four NICs
        assert f"NCCL_SOCKET_IFNAME==rail{4 * t}\n" in env
        script = files[f"hosts/{host}/rails.sh"].decode()
        assert set(re.findall(r"dev (rail\d+)", script)) == names  # no route through a NIC of another tray
    assert not any(p.startswith("hosts/hb0/") for p in files)  # no 72-NIC server any more
    assert json.loads(files["fabric.json"])["gpus_per_host"] == 4


def test_cabling_netbox_and_hosts_name_the_same_tray(compiled):
    design, fab, files = compiled
    hosts = defaultdict(set)
    for path, data in files.items():
        if path.startswith("hosts/") and path.endswith("/netplan.yaml"):
            hosts[path.split("/")[1]] = set(re.findall(r"^    (rail\d+):$", data.decode(), re.M))
    devices = {r["name"]: r for r in _csv(files, "netbox_devices.csv")}
    servers = {n for n, r in devices.items() if r["role"] == "gpu-server"}
    assert servers == set(hosts)
    assert all(devices[h]["device_type"] == "gpu-server-4x400G" for h in servers)
    interfaces = defaultdict(set)
    for r in _csv(files, "netbox_interfaces.csv"):
        if r["device"] in servers:
            interfaces[r["device"]].add(r["name"])
    assert interfaces == hosts
    cabled = defaultdict(set)
    for r in _csv(files, "cabling.csv"):
        if r["tier"] == "1":
            gpu = fab.node(r["a_gpu"])
            assert r["a_device"] == f"hb{gpu.hb_domain}-tray{gpu.rank // 4}" and r["a_port"] == f"rail{gpu.rank}"
            cabled[r["a_device"]].add(r["a_port"])
    assert cabled == hosts
    nb_cables = {(r["side_a_device"], r["side_a_name"]) for r in _csv(files, "netbox_cables.csv")}
    assert {(h, n) for h, names in hosts.items() for n in names} <= nb_cables
    assert "compute tray" in files["README.md"].decode()


def test_one_host_per_domain_stays_the_default():
    d = parse_design("name: dgx\nhb_domain: {size: 8, count: 4}\n", "dgx.yml")
    assert d.gpus_per_host == 8
    _, files = compile_design(d)
    assert sorted({p.split("/")[1] for p in files if p.startswith("hosts/")}) == [f"hb{i}" for i in range(4)]
    assert "gpus_per_host" not in json.loads(files["fabric.json"])


@pytest.mark.parametrize("value, fragment", [
    ("5", "must divide hb_domain.size (72)"), ("144", "must divide hb_domain.size (72)"),
    ("0", "hb_domain.gpus_per_host"), ("-4", "hb_domain.gpus_per_host"), ("four", "hb_domain.gpus_per_host"),
    ("4.5", "hb_domain.gpus_per_host"), ("true", "hb_domain.gpus_per_host"), ("[4]", "hb_domain.gpus_per_host"),
])
def test_hostile_gpus_per_host_names_the_key(value, fragment):
    with pytest.raises(InputError) as e:
        parse_design(NVL72.replace("gpus_per_host: 4", f"gpus_per_host: {value}"), "nvl.yml")
    text = str(e.value)
    assert "hb_domain.gpus_per_host" in text and fragment in text


def test_hostile_gpus_per_host_is_exit_2_and_writes_nothing(tmp_path):
    import subprocess
    import sys
    design = tmp_path / "nvl.yml"
    design.write_text(NVL72.replace("gpus_per_host: 4", "gpus_per_host: 7"))
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "railonly", "compile", str(design), "-o", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "hb_domain.gpus_per_host" in run.stderr + run.stdout and "Traceback" not in run.stderr
    assert not out.exists()


def test_the_key_is_declared_with_its_default():
    f = FIELDS["hb_domain"].fields["gpus_per_host"]
    assert f.default is None and f.kind == "int"
