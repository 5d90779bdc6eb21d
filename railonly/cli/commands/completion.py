"""`railonly completion bash|zsh`: the shell completion script, generated from the parser.

setup.sh writes both under .venv/share/ and prints the line to source; to
install by hand: `railonly completion bash > ~/.local/share/bash-completion/completions/railonly`
or `railonly completion zsh > "${fpath[1]}/_railonly"`.
"""

from __future__ import annotations

import sys

SHELLS = ("bash", "zsh")


def register(sub) -> None:
    p = sub.add_parser("completion", help="print the bash or zsh completion script (setup.sh installs both in .venv)")
    p.add_argument("shell", choices=SHELLS)
    p.set_defaults(func=run)


def run(args) -> int:
    sys.stdout.write(script(args.shell))
    return 0


def script(shell: str) -> str:
    import shtab

    from railonly.cli import build_parser

    text = shtab.complete(build_parser(), shell=shell)
    return text if text.endswith("\n") else text + "\n"
