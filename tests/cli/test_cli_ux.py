"""Operator experience of the command line: output options on every command, colour
only on a terminal, shell completion, bom line items, messages that name the right thing."""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys

import pytest

from railonly import cli, console

from ..conftest import REPO

MINI = str(REPO / "labs" / "mini-l2.yml")
RAILONLY = [sys.executable, "-c", "import sys; from railonly.cli import main; sys.exit(main())"]


def _leaf_parsers(parser, path=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from _leaf_parsers(sub, (*path, name))


def test_every_command_takes_quiet_verbose_and_no_color():
    leaves = list(_leaf_parsers(cli.build_parser()))
    assert len(leaves) > 10
    for path, parser in leaves:
        flags = {s for a in parser._actions for s in a.option_strings}
        assert {"-q", "--quiet", "-v", "--verbose", "--no-color"} <= flags, path


@pytest.mark.parametrize("argv, only", [
    (["validate", "out"], "validate"), (["-q", "lab", "check", "out"], "lab"), (["--no-color", "bom", "d.yml"], "bom"),
    (["-h", "validate"], None), (["--version"], None), (["valid", "x"], None), ([], None), (["-v"], None),
])
def test_a_run_builds_the_parser_of_the_command_it_names(argv, only):
    """One command module is imported for a run (the others cost 0.06 s), and it parses the
    run as the whole parser does; top-level help, --version and a mistyped command get the
    whole parser, whose messages list every command."""
    assert cli._command_named(argv) == only
    if only:
        assert cli.build_parser(only).parse_args(argv) == cli.build_parser().parse_args(argv)


def test_a_lab_is_named_by_the_same_flag_in_deploy_and_destroy():
    parser = cli.build_parser()
    for flag in ("--lab-name", "--lab"):
        assert parser.parse_args(["lab", "destroy", flag, "x1"]).lab == "x1"
    assert parser.parse_args(["lab", "deploy", "out", "--lab-name", "x1"]).lab_name == "x1"


def test_output_options_work_before_and_after_the_command(capsys):
    assert cli.main(["-q", "bom", MINI]) == 0 and console.settings.quiet
    assert capsys.readouterr().out == ""  # -q: nothing on success (bom printed its whole table)
    assert cli.main(["-q", "bom", MINI, "--json"]) == 0 and '"rail-only"' in capsys.readouterr().out  # data asked for
    assert cli.main(["bom", MINI, "-vv", "--no-color"]) == 0
    assert console.settings.verbose == 2 and not console.settings.quiet and not console.settings.color


class _Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("stream, no_color, env, want", [
    (_Tty(), False, {}, True),
    (_Tty(), True, {}, False),  # --no-color
    (_Tty(), False, {"NO_COLOR": "1"}, False),
    (_Tty(), False, {"TERM": "dumb"}, False),
    (io.StringIO(), False, {}, False),  # not a terminal
])
def test_colour_only_on_a_terminal_unless_told_not_to(stream, no_color, env, want):
    assert console.color_wanted(no_color, stream, env) is want


def test_colour_marks_verdicts_and_plain_text_stays_byte_identical(monkeypatch):
    text = "FAIL x: bad\n3 passed, 1 failed\nok\n0 failed"
    monkeypatch.setattr(console.settings, "color", False)
    plain = io.StringIO()
    console.out(text, plain)
    assert plain.getvalue() == text + "\n"
    monkeypatch.setattr(console.settings, "color", True)
    painted = io.StringIO()
    console.out(text, painted)
    assert "\x1b[" in painted.getvalue()
    spans = {text[s.start:s.end]: str(s.style) for s in console.paint(text).spans}
    assert spans["FAIL"] == "bold red" and spans["1 failed"] == "bold red" and spans["3 passed"] == "green"
    assert "0 failed" not in spans


def test_bom_detail_prints_line_items(capsys):
    assert cli.main(["bom", MINI, "--detail"]) == 0
    out = capsys.readouterr().out
    assert "rail-only line items:" in out and "NIC transceiver" in out and "switch generic-8x400G" in out
    assert cli.main(["bom", MINI, "--detail", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["rail-only"]
    assert doc["items"] and sum(i["total_cost_usd"] for i in doc["items"]) == doc["cost_usd"]
    assert cli.main(["bom", MINI]) == 0
    assert "line items" not in capsys.readouterr().out


def test_missing_price_book_is_not_called_a_design(capsys, tmp_path):
    assert cli.main(["bom", MINI, "--prices", str(tmp_path / "nope.yml")]) == 2
    err = capsys.readouterr().err
    assert "nope.yml: file not found" in err and "price book" in err and "design" not in err


def test_a_directory_given_as_a_design_gets_a_fix(capsys):
    assert cli.main(["compile", str(REPO / "labs"), "-o", "/nonexistent/out"]) == 2
    err = capsys.readouterr().err
    assert "labs: is a directory" in err and "fix: give a design YAML file inside it, e.g. " in err
    assert "Traceback" not in err


def test_sweep_gpus_examples_are_gpu_counts(capsys):
    assert cli.main(["sweep", "--gpus", "lots"]) == 2
    err = capsys.readouterr().err
    fix = next(line for line in err.splitlines() if "fix:" in line)
    assert all(int(n) >= 1024 for n in fix.split("--gpus ")[1].split(","))
    assert "design" not in err


def test_a_closed_pipe_is_not_a_traceback():
    proc = subprocess.run(f"{' '.join(map(repr, RAILONLY))} bom {MINI} --detail --json | head -1",
                          shell=True, capture_output=True, text=True, timeout=60, executable="/bin/bash")
    assert proc.stdout.strip() == "{" and "Traceback" not in proc.stderr


# --- shell completion ----------------------------------------------------------------------


def test_bash_completion_completes_commands_and_actions(tmp_path, capsys):
    assert cli.main(["completion", "bash"]) == 0
    script = tmp_path / "railonly.bash"
    script.write_text(capsys.readouterr().out)
    probe = (f"source {script}; COMP_WORDS=(railonly lab ch); COMP_CWORD=2; _shtab_railonly; echo ${{COMPREPLY[@]}};"
             f" COMP_WORDS=(railonly bom --de); COMP_CWORD=2; _shtab_railonly; echo ${{COMPREPLY[@]}}")
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30).stdout.split("\n")
    assert out[0] == "check" and out[1] == "--detail"


def test_zsh_completion_is_a_valid_zsh_script(tmp_path, capsys):
    assert cli.main(["completion", "zsh"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("#compdef railonly") and "_shtab_railonly_lab_commands" in text
    if not shutil.which("zsh"):
        pytest.skip("zsh is not installed: syntax not checked")
    script = tmp_path / "_railonly"
    script.write_text(text)
    assert subprocess.run(["zsh", "-n", str(script)], capture_output=True, timeout=30).returncode == 0


def test_compile_progress_prints_plain_phase_lines_off_a_terminal(tmp_path, capsys):
    assert cli.main(["compile", MINI, "-o", str(tmp_path / "o"), "--progress", "-q"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""  # -q: no summary
    assert "rendering clabernetes manifest" in captured.err and "\x1b[" not in captured.err


def test_a_lab_that_is_not_deployed_exits_3(tmp_path, capsys, monkeypatch):
    from railonly.emulation import lab as lab_module
    from railonly.fabric.compiler import compile_design
    from railonly.fabric.design.design import parse_design
    from railonly.fabric.outdir.writer import write_outdir

    design = parse_design((REPO / "labs" / "mini-l2.yml").read_text().replace("name: mini", "name: opxnotdeployed"), "d.yml")
    write_outdir(str(tmp_path / "nd"), compile_design(design)[1], design.sha256)
    out = str(tmp_path / "nd")
    monkeypatch.setattr(lab_module, "RUN_ROOT", str(tmp_path / "run"))  # locks and records here, not in /run
    for argv in (["lab", "status", out], ["lab", "status", out, "--json"],
                 ["lab", "exec", out, "hb0-gpu0", "--", "true"], ["lab", "fault", out, "--restore"],
                 ["lab", "check", out, "--failover", "opxnotdeployed-rail0-leaf0"]):
        assert cli.main(argv) == 3, argv
    captured = capsys.readouterr()
    # check --failover said "/run/netns/clab-...: No such file or directory" and left its lock file
    assert "not deployed" in captured.out and captured.err.count("is not deployed") == 3
    from railonly.emulation.runtime import lock

    assert not os.path.lexists(lock.path_of("opxnotdeployed"))


def test_progress_reporter_bar_on_a_terminal_lines_elsewhere(monkeypatch, capsys):
    monkeypatch.setattr(console.settings, "quiet", False)
    monkeypatch.setattr(console.settings, "verbose", 0)
    with console.reporter(io.StringIO()) as plain:
        assert isinstance(plain, console.Lines)
        plain.step("bgp: waiting")
        plain.step("bgp: waiting")
        plain.step("flows", 3, 10)  # counts feed bars only
    assert capsys.readouterr().err == "  .. bgp: waiting\n"
    tty = _Tty()
    with console.reporter(tty) as bar:
        assert isinstance(bar, console.Bar)
        bar.step("deploy: netns")
        bar.step("flows", 5, 10)
        bar.step("flows", 10, 10)
    assert "deploy: netns" in tty.getvalue() and "10/10" in tty.getvalue()
    monkeypatch.setattr(console.settings, "quiet", True)
    assert isinstance(console.reporter(_Tty()), console.Lines)  # -q: no bar


def test_demo_counts_the_files_compile_says_it_wrote(tmp_path, capsys):
    import os
    import re

    from railonly.cli.commands import demo

    out = tmp_path / "out"
    assert cli.main(["compile", MINI, "-o", str(out)]) == 0
    wrote = re.search(r"wrote\s+([0-9,]+) files", capsys.readouterr().out).group(1)
    on_disk = sum(len(files) for _, _, files in os.walk(out))  # MANIFEST.json is a file written too
    assert demo._compiled(str(out)) == f"{wrote} files" == f"{on_disk:,} files"


@pytest.mark.parametrize("argv", [
    ["lab", "traffic", "OUT", "--pattern", "ring-allreduce", "--bytes", "-5"],
    ["lab", "traffic", "OUT", "--pattern", "ring-allreduce", "--bytes", "0"],
    ["lab", "check", "OUT", "--timeout", "nan"],
    ["lab", "check", "OUT", "--timeout", "-1"],
    ["lab", "exec", "OUT", "hb0-gpu0", "--timeout", "0", "--", "true"],
])
def test_counts_and_timeouts_must_be_above_zero(argv, capsys):
    # refused before any lab is looked at: a negative --bytes used to run iperf3 into a 120 s timeout
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "must be a number above 0" in err and "fix:" in err


@pytest.mark.parametrize("where", ["missing", "empty"])
def test_validate_of_something_that_is_no_outdir_says_what_to_give(where, tmp_path, capsys):
    if where == "empty":
        (tmp_path / where).mkdir()
    assert cli.main(["validate", str(tmp_path / where)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / where) in err and "fix: give the" in err and "railonly compile" in err


@pytest.mark.parametrize("command", [["validate"], ["diff", "OTHER"], ["push"]])
@pytest.mark.parametrize("given, says, fix", [
    ("", "'': an OUTDIR path is needed, and this one is empty", "give the folder railonly compile wrote"),
    ("FILE", "FILE: is a file, not an OUTDIR folder", "give the folder railonly compile wrote"),
    ("OUT/README.md", "OUT/README.md: is a file, not an OUTDIR folder", "give the folder it is in, OUT"),
    ("MISSING", "MISSING: no such directory", "give the folder railonly compile wrote"),
])
def test_an_outdir_argument_that_is_no_folder_is_said_alike_by_every_command(command, given, says, fix, tmp_path, capsys):
    """validate said ': no such directory' for '' and for a file; push read the current folder for ''."""
    out = tmp_path / "out"
    assert cli.main(["compile", str(MINI), "-o", str(out), "-q"]) == 0
    (tmp_path / "f").write_text("x")
    names = {"FILE": str(tmp_path / "f"), "OUT": str(out), "MISSING": str(tmp_path / "nope")}
    arg = given.replace("OUT/", names["OUT"] + "/") if given.startswith("OUT/") else names.get(given, given)
    argv = [command[0], arg] + ([str(out)] if command[1:] else [])
    capsys.readouterr()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    for word, name in names.items():
        says, fix = says.replace(word, name, 1) if says.startswith(word) else says, fix.replace(word, name)
    assert f"error: {says}" in err and f"fix: {fix}" in err and "Traceback" not in err, err


@pytest.mark.parametrize("argv, what", [(["compile", "", "-o", "/nonexistent/o"], "design"),
                                        (["resilience", str(MINI), "--job", ""], "job"),
                                        (["bom", str(MINI), "--prices", ""], "price book")])
def test_an_empty_path_is_a_missing_file_named_as_given(argv, what, capsys):
    """`--job ''` was taken as no job; an empty design path was called 'design'."""
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "error: '': file not found" in err and f"give the path of a {what} YAML file" in err, err


def test_problems_printed_are_capped_with_a_count_of_the_rest(tmp_path, capsys):
    """A design with 20,000 unknown keys printed 40,001 lines."""
    f = tmp_path / "many.yml"
    f.write_text((REPO / "labs" / "mini-l2.yml").read_text() + "".join(f"bad{i}: 1\n" for i in range(2000)))
    assert cli.main(["compile", str(f), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert sum(line.startswith("error: ") for line in err) == 50 and "bad49" in err[-4] and "bad50:" not in "".join(err)
    assert err[-2:] == ["... and 1,950 more problems (fix these first)", "2,000 problems found; nothing was written."]
    assert not (tmp_path / "out").exists()


def test_demo_without_root_compiles_validates_and_skips_the_lab_as_documented(tmp_path, capsys, monkeypatch):
    # docs/commands/demo.md said "Needs root ...; exit 3 names what is missing": without root the
    # demo skips the lab and exits 0
    from railonly.cli.commands import demo

    run = demo._Phases.run

    def no_lab(self, label, argv, *a, **kw):
        assert argv[0] != "lab", "the test must never deploy a lab"
        return run(self, label, argv, *a, **kw)

    monkeypatch.setattr(demo._Phases, "run", no_lab)
    monkeypatch.setattr(demo.os, "geteuid", lambda: 1000)
    assert cli.main(["demo", "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "lab: skipped (needs root for network namespaces)" in out and "--dry-run" in out
    page = (REPO / "docs" / "commands" / "demo.md").read_text()
    assert "lab: skipped (needs root for network namespaces)" in page and "exits 0" in page


@pytest.mark.parametrize("code", [130, 143])
def test_demo_stops_at_an_interrupted_lab_phase_and_destroys_the_lab(tmp_path, monkeypatch, code):
    # Ctrl-C (130) or SIGTERM (143) during `lab check` ended that command only: the demo went on
    # to run both traffic patterns on the lab before its destroy, and then exited as a failure
    from railonly.cli.commands import demo
    from railonly.proc import Terminated, interrupt_exit

    calls = []

    def fake_main(argv):
        calls.append(" ".join(argv[:2]))
        return code if argv[:2] == ["lab", "check"] else 0

    monkeypatch.setattr(demo.os, "geteuid", lambda: 0)
    monkeypatch.setattr(demo, "_lab_name", lambda outdir: "t")
    phases = demo._Phases(fake_main, False, str(tmp_path))
    with pytest.raises(KeyboardInterrupt) as e:
        demo.run_lab(str(tmp_path / "out"), phases)
    assert interrupt_exit(e.value) == code and isinstance(e.value, Terminated) == (code == 143)
    assert calls == ["lab deploy", "lab check", "lab destroy"]
