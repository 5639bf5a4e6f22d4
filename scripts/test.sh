#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh machine, then run it.
#   bash scripts/test.sh            # the whole suite (unit, notebooks, real browser)
#   bash scripts/test.sh -m "not browser"   # extra pytest arguments pass through
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then
  echo "== installing Debian's chromium for the browser tests"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

echo "== installing vizdebug with its test dependencies"
python -m pip install --quiet --disable-pip-version-check torch==2.13.0
python -m pip install --quiet --disable-pip-version-check -e ".[test,lightning,transformers]"

echo "== ruff"
python -m ruff check vizdebug tests benchmarks

echo "== pytest"
python -m pytest -q -p no:cacheprovider "$@"
