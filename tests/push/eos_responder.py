"""A tiny scripted EOS-like CLI, the ForceCommand of a test sshd: no EOS device exists here.

It answers only what netmiko's ``arista_eos`` driver and railonly's push send,
in EOS's shapes: ``>``/``#`` prompts, ``terminal width``/``length``,
``show running-config``, ``configure session NAME`` (prompt
``host(config-s-NAME6)#``, EOS shows the first 6 characters), ``rollback
clean-config``, config lines, ``show session-config diffs``, ``commit``,
``abort``. A line containing ``BADCMD`` is rejected with ``% Invalid input``.
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

    def running() -> list[str]:
        with open(running_path) as f:
            return [ln for ln in f.read().splitlines() if ln.strip()]

    def prompt() -> str:
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
            with open(running_path, "w") as f:
                f.write("\n".join(session) + "\n")
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
