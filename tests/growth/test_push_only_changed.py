"""`railonly push --only-changed OLD_OUTDIR` without a lab: what is selected, and bad input.
(The push itself against a deployed lab: tests/push/test_push_only_changed.py, netns.)"""

from __future__ import annotations

import shutil

from railonly.cli import main
from railonly.fabric.compiler import compile_design
from railonly.fabric.design.design import parse_design
from railonly.fabric.outdir.changeplan import changed_devices
from railonly.fabric.outdir.writer import write_outdir

TEXT = ("name: onlych\ntopology: rail-only\nhb_domain: {size: 2, count: 6, gbps: 3600}\n"
        "nic: {gbps: 400}\nswitch: {radix: 4, platform: sonic}\nrail: {mode: routed}\n")


def _outdir(tmp_path, name="out", text=TEXT):
    d = parse_design(text, "d.yml")
    write_outdir(str(tmp_path / name), compile_design(d)[1], d.sha256)
    return tmp_path / name


def _inventory(tmp_path, out):
    inv = tmp_path / "inv.yml"
    names = sorted(p.name for p in (out / "configs").iterdir())
    inv.write_text("defaults: {platform: sonic}\ndevices:\n" + "".join(f"  {n}: {{host: 127.0.0.1, port: 9}}\n" for n in names))
    return inv


def test_nothing_changed_pushes_nothing(tmp_path, capsys):
    out = _outdir(tmp_path)
    old = tmp_path / "old"
    shutil.copytree(out, old)
    code = main(["push", str(out), "--only-changed", str(old), "--inventory", str(_inventory(tmp_path, out))])
    assert code == 0
    assert "nothing to push" in capsys.readouterr().out


def test_selects_the_devices_the_plan_names(tmp_path):
    # growing within the plan: a fourth leaf per rail, and the spines that gain it
    old = _outdir(tmp_path, "old", TEXT.replace("count: 6", "count: 6, planned: 8"))
    new = _outdir(tmp_path, "new", TEXT.replace("count: 6", "count: 8, planned: 8"))
    assert changed_devices(str(old), str(new)) == ["onlych-rail0-leaf3", "onlych-rail0-spine0", "onlych-rail0-spine1",
                                                    "onlych-rail1-leaf3", "onlych-rail1-spine0", "onlych-rail1-spine1"]


def test_bad_old_outdir_is_exit_2_naming_the_file(tmp_path, capsys):
    out = _outdir(tmp_path)
    old = tmp_path / "old"
    shutil.copytree(out, old)
    (old / "configs" / "onlych-rail0-leaf0" / "config_db.json").unlink()
    (old / "configs" / "onlych-rail0-leaf0" / "config_db.json").symlink_to("/etc/passwd")
    code = main(["push", str(out), "--only-changed", str(old), "--inventory", str(_inventory(tmp_path, out))])
    err = capsys.readouterr().err
    assert code == 2 and "onlych-rail0-leaf0/config_db.json: is a symbolic link; refused, not followed" in err


def test_a_relative_or_linked_outdir_is_read_as_the_folder_it_names(tmp_path, capsys, monkeypatch):
    """OUTDIR as given (relative, or a link to it) was compared with its resolved path: a traceback."""
    out = _outdir(tmp_path)
    old = tmp_path / "old"
    shutil.copytree(out, old)
    inv = str(_inventory(tmp_path, out))
    (tmp_path / "link").symlink_to(out)
    monkeypatch.chdir(tmp_path)
    for given in ("out", "link"):
        assert main(["push", given, "--only-changed", "old", "--inventory", inv]) == 0
        assert "nothing to push" in capsys.readouterr().out


def test_a_changed_device_the_inventory_lacks_is_exit_2(tmp_path, capsys):
    """It was cut from the changed set before the count: "nothing to push", exit 0, the switch
    left on its old config. --device picks the devices on purpose: the rest are named, not an error."""
    old = _outdir(tmp_path, "old", TEXT.replace("count: 6", "count: 6, planned: 8"))
    new = _outdir(tmp_path, "new", TEXT.replace("count: 6", "count: 8, planned: 8"))
    inv = tmp_path / "inv.yml"
    inv.write_text("defaults: {platform: sonic}\ndevices:\n  onlych-rail0-leaf0: {host: 127.0.0.1, port: 9}\n")
    assert main(["push", str(new), "--only-changed", str(old), "--inventory", str(inv)]) == 2
    err = capsys.readouterr().err
    assert "6 of the 6 devices whose configs differ" in err and "onlych-rail0-leaf3" in err and "--device" in err
    assert main(["push", str(new), "--only-changed", str(old), "--inventory", str(inv),
                 "--device", "onlych-rail0-leaf0"]) == 0
    out = capsys.readouterr().out
    assert "6 changed device(s) not named by --device are not pushed" in out and "nothing to push" in out
