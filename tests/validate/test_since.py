"""The plant files judged by what changed since the previous self-checked compile
(validate/since.py): growth is settled by its new rows; anything it cannot vouch for goes
back to the whole files, and a wrong row is never passed."""

from __future__ import annotations

import pytest

from railonly.cli import main
from railonly.fabric.graph import fabric_json
from railonly.fabric.outdir_layout import CABLING_CSV, FABRIC_JSON, NETBOX_CABLES_CSV, NETBOX_INTERFACES_CSV
from railonly.fabric.validate.plant import plant
from railonly.fabric.validate.since import judged_since, plant_since

# 4 rails, radix 16: a leaf serves 8 HB domains; planned 32 sizes the spines for four leaves a rail
GROWN = "name: t\nhb_domain: {{size: 4, count: {count}, planned: 32}}\nswitch: {{radix: 16}}\nrail: {{mode: routed}}\n"


def _compiled(tmp_path, count: int) -> dict[str, str]:
    design, out = tmp_path / f"d{count}.yml", tmp_path / f"o{count}"
    design.write_text(GROWN.format(count=count))
    assert main(["compile", "-q", "--no-check", "--full", str(design), "-o", str(out)]) == 0
    return {str(p.relative_to(out)): p.read_text() for p in out.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    """(files before, files after) of a growth that fills a leaf (7 -> 8) and one that adds a leaf (8 -> 9)."""
    tmp = tmp_path_factory.mktemp("since")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAILONLY_CACHE_DIR", str(tmp / "cache"))
        return {n: (_compiled(tmp, n), _compiled(tmp, n + 1)) for n in (7, 8)}


def _judge(old: dict[str, str], new: dict[str, str]):
    fabric = fabric_json.parse(new[FABRIC_JSON])
    return judged_since(fabric, new.get, old.get), plant(fabric, new.get)


def _with(files: dict[str, str], path: str, old: str, new: str) -> dict[str, str]:
    assert old in files[path], (path, old)
    return {**files, path: files[path].replace(old, new, 1)}


def _new_lines(old: dict[str, str], new: dict[str, str], path: str) -> list[str]:
    before = set(old[path].split("\n"))
    return [line for line in new[path].split("\n") if line not in before]


@pytest.mark.parametrize("count", [7, 8])
def test_growth_is_judged_by_its_new_rows(grown, count):
    old, new = grown[count]
    since, whole = _judge(old, new)
    assert since is not None, "growth within planned went back to the whole files"
    assert all(r.passed for r in since) and all(r.passed for r in whole)
    assert [r.id for r in since] == [r.id for r in whole]


def test_a_wrong_new_row_is_never_passed(grown):
    old, new = grown[8]
    row = _new_lines(old, new, CABLING_CSV)[0]
    fields = row.split(",")
    fields[9] = "999"  # length_m
    bad = _with(new, CABLING_CSV, row, ",".join(fields))
    since, whole = _judge(old, bad)
    assert since is None and not all(r.passed for r in whole)
    assert not all(r.passed for r in plant_since(fabric_json.parse(bad[FABRIC_JSON]), bad.get, old.get))


def test_a_new_row_for_an_old_cable_goes_back_to_the_whole_files(grown):
    old, new = grown[8]
    row = _new_lines(old, new, NETBOX_CABLES_CSV)[0]
    first_old = new[NETBOX_CABLES_CSV].split("\n")[1]
    # the old cable listed twice (in other words: not the same line), the new one missing
    bad = _with(new, NETBOX_CABLES_CSV, row, first_old.replace(",planned,", ",connected,"))
    since, whole = _judge(old, bad)
    assert since is None and not all(r.passed for r in whole)


def test_an_old_row_changed_goes_back_to_the_whole_files(grown):
    old, new = grown[7]
    line = new[CABLING_CSV].split("\n")[1]
    assert line in old[CABLING_CSV]
    bad = _with(new, CABLING_CSV, line, line.replace(",30,", ",31,"))
    since, whole = _judge(old, bad)
    assert since is None and not all(r.passed for r in whole)


def test_an_interface_row_gone_for_good_goes_back_to_the_whole_files(grown):
    old, new = grown[7]
    line = next(ln for ln in new[NETBOX_INTERFACES_CSV].split("\n")[1:] if ln.startswith("hb0,rail0,"))
    since, _whole = _judge(old, _with(new, NETBOX_INTERFACES_CSV, line + "\n", ""))
    assert since is None


@pytest.mark.parametrize("change", ["head", "gpu in an old domain", "old link changed", "cable id twice"])
def test_what_since_cannot_vouch_for_goes_back_to_the_whole_files(grown, change):
    old, new = grown[7]
    text = new[FABRIC_JSON]
    if change == "head":
        bad = _with(new, FABRIC_JSON, '"nic_gbps": 400', '"nic_gbps": 200')
    elif change == "gpu in an old domain":  # the domain's GPUs name their host together
        gpu = '  {"name": "hb0-gpu0", "role": "gpu", "hb_domain": 0, "rank": 0, "rail": 0},\n'
        assert gpu in text
        bad = _with(new, FABRIC_JSON, gpu, gpu + gpu.replace("hb0-gpu0", "hb0-gpu9").replace('"rank": 0', '"rank": 9'))
    elif change == "old link changed":
        old_link = next(ln for ln in text.split("\n") if '"cable_id"' in ln and ln in old[FABRIC_JSON])
        bad = _with(new, FABRIC_JSON, old_link, old_link.replace('"length_m": 30', '"length_m": 31'))
    else:
        new_link = next(ln for ln in _new_lines(old, new, FABRIC_JSON) if '"cable_id"' in ln)
        old_id = next(ln for ln in text.split("\n") if '"cable_id"' in ln).split('"cable_id": ')[1].split(",")[0]
        new_id = new_link.split('"cable_id": ')[1].split(",")[0]
        bad = _with(new, FABRIC_JSON, new_link, new_link.replace(new_id, old_id))
        for path in (CABLING_CSV, NETBOX_CABLES_CSV):
            bad = _with(bad, path, new_id.strip('"'), old_id.strip('"'))
    since, _whole = _judge(old, bad)
    assert since is None


def test_without_a_base_the_whole_files_are_judged(grown):
    _old, new = grown[7]
    fabric = fabric_json.parse(new[FABRIC_JSON])
    assert [r.detail for r in plant_since(fabric, new.get, None)] == [r.detail for r in plant(fabric, new.get)]
    assert judged_since(fabric, new.get, lambda path: None) is None
