#!/usr/bin/env bash
# One-time (idempotent) set-up for a fresh Debian machine: system packages the
# labs and validators need, a virtual environment at .venv, and railonly in it.
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")"

# Debian packages: python3 + python3-venv (the .venv below; Debian splits venv
# and ensurepip out of python3), FRR (routing + vtysh parser), iperf3 (traffic),
# lldpd (cabling check), openssh-server + openssh-client (sshd in the lab, and
# ssh-keygen for its keys), tcpdump/nftables/traceroute (path evidence),
# iproute2 (ip, bridge, tc: netns, veth, qdiscs), procps (sysctl).
APT_PACKAGES="python3 python3-venv frr iperf3 lldpd openssh-server openssh-client tcpdump nftables traceroute iproute2 iputils-ping ethtool procps"

missing=""
for p in $APT_PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: these Debian packages are missing:$missing; run this script as root (or install them)" >&2
    exit 3
  fi
  echo "setup: installing Debian packages:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # The packages' own services (frr, lldpd, ssh) are not needed: railonly starts
  # its own instances inside lab namespaces. policy-rc.d keeps them from starting.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
  rm -f /usr/sbin/policy-rc.d
fi

# pip, minus two kinds of noise: this machine's pip configuration names local
# index folders that lack most projects (pip warns once per project), and
# setuptools announces every editable install. Errors, and any other warning,
# still print; pip's exit status is kept (pipefail).
quiet_pip() {
  PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip -q "$@" 2>&1 \
    | { grep -v -E "^WARNING: Location 'file://[^']*' is ignored: it is neither a file nor a directory\.$" || true; }
}

PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "setup: railonly needs Python 3.11 or newer; $PY is $("$PY" -V 2>&1 || echo missing)." \
       "Install a newer python3 (or set PYTHON=/path/to/python3.11) and run this again" >&2
  exit 3
fi
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
# Reinstall only when pyproject.toml changed since the last install.
stamp=.venv/.railonly-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ ! -x .venv/bin/railonly ]; then
  echo "setup: installing railonly and its Python packages into .venv"
  quiet_pip install --upgrade pip >/dev/null
  quiet_pip install -e '.[test,docs]'
  touch "$stamp"
fi

# Shell completion, generated from the argument parser (`railonly completion`),
# kept in the venv (nothing is written to your home); regenerated when the
# commands change.
bash_comp=.venv/share/bash-completion/completions/railonly
zsh_comp=.venv/share/zsh/site-functions/_railonly
if [ ! -f "$bash_comp" ] || [ -n "$(find railonly -name '*.py' -newer "$bash_comp" -print -quit)" ]; then
  mkdir -p "$(dirname "$bash_comp")" "$(dirname "$zsh_comp")"
  .venv/bin/railonly completion bash > "$bash_comp"
  .venv/bin/railonly completion zsh > "$zsh_comp"
  echo "setup: shell completion: bash: source $PWD/$bash_comp; zsh: fpath+=($PWD/$(dirname "$zsh_comp")) before compinit"
fi
