#!/usr/bin/env bash
# The Python package as users install it: a manylinux_2_17 (manylinux2014) x86_64 abi3 wheel,
# linked by zig (the `ziglang` wheel from PyPI, so no container or old-glibc build host is
# needed), installed into a fresh venv and run against the whole pytest suite; and the sdist,
# built back into a wheel, to show it builds. The `dev` profile keeps this to a few minutes;
# the shipped wheel uses the `wheel` profile (scripts/release.sh).
#
# The fresh venv holds only the wheel. The suite's own needs (pytest, the adapter libraries, the
# peer clients) are borrowed from test-deps/.venv-py by a path line in a .pth file: a plain path
# line does not run that venv's .pth files, so its editable `mcpmux` (maturin develop) stays out
# and `import mcpmux` can only find the installed wheel, which the script checks before the run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv_py="$root/test-deps/.venv-py"
house="$root/test-deps/wheelhouse"
fresh="$root/test-deps/.venv-wheel"
if ! "$venv_py/bin/python" -c 'import ziglang' 2>/dev/null; then
  "$root/scripts/install-test-deps.sh"
fi
export PATH="$venv_py/bin:$PATH" VIRTUAL_ENV="$venv_py"
rm -rf "$house" "$fresh"
mkdir -p "$house/sdist-built"
cd "$root/crates/mcpmux-python"

echo "== the manylinux2014 abi3 wheel (maturin --zig)"
maturin build --quiet --locked --profile dev --zig --compatibility manylinux2014 --out "$house"
wheel=$(ls "$house"/mcpmux-*-abi3-manylinux*_2_17_x86_64*.whl)

echo "== the sdist, and a wheel built from it"
maturin sdist --out "$house"
# The build reuses the workspace's target dir, so only the sdist's own crates compile again.
CARGO_TARGET_DIR="$root/target" MATURIN_PEP517_ARGS="--profile dev" \
  pip wheel --quiet --disable-pip-version-check --no-build-isolation --no-deps \
  -w "$house/sdist-built" "$house"/mcpmux-*.tar.gz
ls "$house"/sdist-built/mcpmux-*.whl >/dev/null

echo "== the wheel in a fresh venv: pytest"
python3 -m venv "$fresh"
"$fresh/bin/pip" install --quiet --disable-pip-version-check --no-deps "$wheel"
site_fresh=$("$fresh/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$venv_py/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' \
  >"$site_fresh/test-needs-from-venv-py.pth"
cd tests
"$fresh/bin/python" - "$fresh" <<'PY'
import pathlib, sys
import mcpmux, mcpmux._mcpmux as native
where = pathlib.Path(native.__file__).resolve()
if not where.is_relative_to(pathlib.Path(sys.argv[1]).resolve()):
    sys.exit(f"mcpmux was imported from {where}, not from the installed wheel")
print(f"mcpmux {mcpmux.__version__} from {where}")
PY
"$fresh/bin/python" -m pytest -q -p no:cacheprovider .
