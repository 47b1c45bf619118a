#!/usr/bin/env bash
# System packages the project needs beyond Python: Perl's XML::DOM for the official
# ROUGE-1.5.5 script, python3-venv where python3 cannot make a virtual environment (the
# README's commands make one), python3-wheel where wheel is missing; with --tests also
# headless Chromium, which only the test that renders the attention page uses.
set -euo pipefail
need=()
perl -MXML::DOM -e1 2>/dev/null || need+=(libxml-dom-perl)
# Debian's python3 makes virtual environments (the README's commands) only with ensurepip,
# which its python3-venv package brings.
python3 -c "import ensurepip, venv" 2>/dev/null || need+=(python3-venv)
# With `wheel` importable, Debian 12's pip (23.0) builds pyrouge and this project as wheels;
# without it, it installs them by the deprecated `setup.py install` and says so (two
# DEPRECATION notices in the middle of the README's first command).
# (Only Debian's own python3, in /usr, sees the package.)
if [ "$(python3 -c 'import sys; print(sys.base_prefix)')" = /usr ]; then
  python3 -c "import wheel" 2>/dev/null || need+=(python3-wheel)
fi
if [ "${1:-}" = "--tests" ]; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
