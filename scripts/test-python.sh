#!/usr/bin/env bash
# The Python package's tests: builds the extension (dev profile, not the wheel's LTO one,
# into the workspace's target dir, so the library is not compiled twice) and installs it into
# test-deps/.venv-py with `maturin develop`, then runs the pytest suite against real servers
# (the test server, the reference servers of test-deps/). scripts/install-test-deps.sh makes
# the environment.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/test-deps/.venv-py"
if [[ ! -x "$venv/bin/maturin" ]]; then
  "$root/scripts/install-test-deps.sh"
fi
cd "$root"
scripts/build-test-programs.sh
cd crates/mcpmux-python
VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" maturin develop --profile dev --quiet
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests
