"""A tiny scripted EOS-like CLI, the ForceCommand of a test sshd: no EOS device exists here.

It answers only what netmiko's ``arista_eos`` driver and railonly's push send,
in EOS's shapes: ``>``/``#`` prompts, ``terminal width``/``length``,
``show running-config``, ``configure session NAME`` (prompt
``host(config-s-NAME6)#``, EOS shows the first 6 characters), ``rollback
clean-config``, config lines, ``show session-config diffs``, ``commit``,
``abort``, ``commit timer hh:mm:ss`` (the session is committed but pending:
``configure session NAME commit`` confirms it, ``configure session NAME
abort`` restores the config from before), ``configure`` mode with
``maintenance`` / ``unit System`` / ``[no] quiesce`` (the maintenance state is
kept in RUNNING.maint), and ``show ip bgp summary | json`` (one peer per
``neighbor X remote-as`` line, Established unless the running config holds
``BADPEER``). A line containing ``BADCMD`` is rejected with ``% Invalid input``.
Submode prompts (``-if-Et1``) are not imitated. Every line received is
appended to LOG (one JSON string per line) so a test can check the exact
command sequence; the running config lives in RUNNING (a text file).

    python eos_responder.py LOG RUNNING
"""

import difflib
import json
import sys

HOST = "eos1"


def main() -> int:
    log_path, running_path = sys.argv[1], sys.argv[2]
    log = open(log_path, "a", buffering=1)
    out = sys.stdout
    mode, session, sname = ">", None, ""
    pending: dict[str, list[str]] = {}  # session name -> running config before its timed commit
    conf = False  # in `configure` mode

    def running() -> list[str]:
        with open(running_path) as f:
            return [ln for ln in f.read().splitlines() if ln.strip()]

    def write_running(lines: list[str]) -> None:
        with open(running_path, "w") as f:
            f.write("\n".join(lines) + "\n")

    def bgp_summary() -> str:
        lines = running()
        state = "Idle" if any("BADPEER" in ln for ln in lines) else "Established"
        peers = {ln.split()[1]: {"peerState": state, "prefixReceived": 3 if state == "Established" else 0}
                 for ln in (x.strip() for x in lines) if ln.startswith("neighbor ") and " remote-as " in ln}
        return json.dumps({"vrfs": {"default": {"peers": peers}}})

    def prompt() -> str:
        if conf:
            return f"{HOST}(config)#"
        if session is not None:
            return f"{HOST}(config-s-{sname[:6]})#"
        return HOST + mode

    out.write("Last login: never\n")
    while True:
        out.write(prompt() + " ")
        out.flush()
        raw = sys.stdin.readline()
        if not raw:
            return 0
        line = raw.rstrip("\r\n")
        cmd = line.strip()
        if cmd:
            log.write(json.dumps(line) + "\n")
        if not cmd:
            continue
        if conf:
            if cmd in ("end", "exit"):
                conf = False
            elif cmd in ("quiesce", "no quiesce"):
                with open(running_path + ".maint", "w") as f:
                    f.write("quiesced\n" if cmd == "quiesce" else "active\n")
            elif cmd not in ("maintenance", "unit System"):
                out.write("% Invalid input\n")
            continue
        if session is None:
            if cmd == "enable":
                mode = "#"
            elif cmd.startswith("terminal width"):
                out.write(f"Width set to {cmd.split()[-1]} columns.\n")
            elif cmd == "terminal length 0":
                out.write("Pagination disabled.\n")
            elif cmd in ("exit", "logout"):
                return 0
            elif cmd == "show running-config" and mode == "#":
                out.write("! Command: show running-config\n! device: eos1 (vEOS-lab, EOS-4.30.0F)\n!\n")
                out.write("\n".join(running()) + "\nend\n")
            elif cmd in ("configure", "configure terminal") and mode == "#":
                conf = True
            elif cmd == "show ip bgp summary | json" and mode == "#":
                out.write(bgp_summary() + "\n")
            elif cmd.startswith("configure session ") and len(cmd.split()) == 4 and mode == "#":
                name, verb = cmd.split()[2:]
                if name not in pending:
                    out.write(f"% No pending commit for session {name}\n")
                elif verb == "commit":
                    del pending[name]
                elif verb == "abort":
                    write_running(pending.pop(name))
                else:
                    out.write("% Invalid input\n")
            elif cmd.startswith("configure session ") and mode == "#":
                sname = cmd.split()[2]
                session = running()
            else:
                out.write("% Invalid input\n")
            continue
        # inside a configure session
        if cmd == "rollback clean-config":
            session = []
        elif cmd == "show session-config diffs":
            for d in difflib.unified_diff(running(), session, "system:/running-config", f"session:/{sname}-session-config", lineterm=""):
                out.write(d + "\n")
        elif cmd == "commit":
            write_running(session)
            session = None
        elif cmd.startswith("commit timer "):
            pending[sname] = running()
            write_running(session)
            session = None
        elif cmd == "abort":
            session = None
        elif cmd in ("end", "exit"):
            session = None  # left pending, as EOS does
        elif "BADCMD" in cmd:
            out.write(f"% Invalid input (at token 0: '{cmd.split()[0]}')\n")
        else:
            session.append(line.rstrip())


if __name__ == "__main__":
    sys.exit(main())
