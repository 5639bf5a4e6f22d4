#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh machine, then run it.
#   bash scripts/test.sh                                # the whole suite (unit, notebooks, real browser)
#   bash scripts/test.sh -m "not browser and not slow"  # the quick part: needs no root, no apt
# Extra arguments pass through to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
CHROMIUM="${VIZDEBUG_CHROMIUM:-/usr/bin/chromium}"

# True unless the arguments deselect the browser tests (-m "not browser ..."); only then is
# Chromium needed at all.
browser_tests_wanted() {
  local arg
  for arg in "$@"; do
    case "$arg" in *"not browser"*) return 1 ;; esac
  done
  return 0
}

# Debian's chromium, with apt-get as root or through password-less sudo; otherwise say what
# to do and go on (tests/conftest.py skips the browser tests, naming the missing browser).
install_chromium() {
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo="sudo -n"
    else
      echo "== $CHROMIUM not found, and installing it needs root: the browser tests will be" \
           "skipped. Install it with 'sudo apt-get install chromium' (or set VIZDEBUG_CHROMIUM)," \
           "or pass -m \"not browser\"."
      return 0
    fi
  fi
  echo "== installing Debian's chromium for the browser tests"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
}

echo "== installing vizdebug with its test dependencies"
# torch first, pinned: with it in place the extras keep it, instead of fetching PyPI's
# default build (on Linux a CUDA build of several GB; see the README for the CPU build)
python -m pip install --quiet --disable-pip-version-check torch==2.13.0
python -m pip install --quiet --disable-pip-version-check -e ".[torch,test,lightning,transformers]"

if [ ! -x "$CHROMIUM" ] && browser_tests_wanted "$@"; then
  install_chromium
fi

# the standalone widget manager for tests/browser/test_frontends.py, once, into a cache folder
# (that test is skipped, naming the folder, without it)
HTML_MANAGER="${VIZDEBUG_HTML_MANAGER:-${XDG_CACHE_HOME:-$HOME/.cache}/vizdebug-tests/html-manager-1.0.15}"
if browser_tests_wanted "$@" && command -v npm >/dev/null 2>&1 &&
   [ ! -f "$HTML_MANAGER/node_modules/@jupyter-widgets/html-manager/dist/embed-amd.js" ]; then
  echo "== installing @jupyter-widgets/html-manager (npm) into $HTML_MANAGER"
  npm install --silent --no-audit --no-fund --prefix "$HTML_MANAGER" \
    @jupyter-widgets/html-manager@1.0.15 requirejs@2.3.8 || echo "== npm install failed"
fi

echo "== ruff"
python -m ruff check vizdebug tests benchmarks scripts

echo "== pytest"
start=$SECONDS
status=0
python -m pytest -q -p no:cacheprovider "$@" || status=$?
echo "== pytest took $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s"
exit $status
