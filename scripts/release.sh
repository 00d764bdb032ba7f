#!/usr/bin/env bash
# What a release ships, into dist/ (git-ignored), for the machine it runs on: the `mcpmux`
# binary of the `dist` profile (Cargo.toml), the crate packages of every publishable crate, the
# Python wheel and sdist when maturin is at hand, and SHA256SUMS over all of them.
# .github/workflows/ci.yml runs it on tags on each hosted OS and keeps dist/ as an artifact.
# Publishing (`cargo publish`, `twine upload`, a GitHub release) is left to a person.
# RELEASE_PROFILE=dev: the same steps with debug builds, minutes faster, to check the script.
set -euo pipefail
profile="${RELEASE_PROFILE:-dist}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
rm -rf dist
mkdir -p dist

version=$(cargo metadata --no-deps --locked --format-version 1 | python3 -c '
import json, sys
print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "mcpmux-cli"))')
target=$(rustc -vV | sed -n 's/^host: //p')
exe=""
case "$target" in *windows*) exe=".exe" ;; esac

echo "== mcpmux $version for $target (cargo build --profile $profile; dist is fat LTO: minutes)"
cargo build --locked --profile "$profile" -p mcpmux-cli
outdir="$profile"
[[ "$profile" == dev ]] && outdir=debug
cp "target/$outdir/mcpmux$exe" "dist/mcpmux-$version-$target$exe"

echo "== the crate packages"
publishable=$(cargo metadata --no-deps --locked --format-version 1 | python3 -c '
import json, sys
print(" ".join("-p " + p["name"] for p in json.load(sys.stdin)["packages"] if p["publish"] != []))')
# No verify build: the packages' sources are the ones just built; the test command packages
# them on every run too.
cargo package --locked --no-verify $publishable
for crate in $publishable; do
  [[ "$crate" == -p ]] && continue
  cp "target/package/$crate-$version.crate" dist/
done

# maturin: on PATH, or the one scripts/install-test-deps.sh puts in test-deps/.venv-py.
maturin=$(command -v maturin || true)
[[ -z "$maturin" && -x test-deps/.venv-py/bin/maturin ]] && maturin="$root/test-deps/.venv-py/bin/maturin"
if [[ -n "$maturin" ]]; then
  echo "== the Python wheel (profile \`wheel\`, pyproject.toml) and sdist"
  wheel_profile=()
  [[ -n "${RELEASE_PROFILE:-}" ]] && wheel_profile=(--profile "$profile")
  # With zig (`pip install ziglang`) the wheel is manylinux_2_17, for every glibc since 2014;
  # without, it is tagged for this machine's glibc.
  zig=()
  if [[ "$(uname -s)" == Linux ]] \
    && { "$(dirname "$maturin")/python" -c 'import ziglang' 2>/dev/null || command -v zig >/dev/null; }; then
    zig=(--zig --compatibility manylinux2014)
  fi
  (cd crates/mcpmux-python \
    && "$maturin" build --locked "${wheel_profile[@]}" ${zig[@]+"${zig[@]}"} --out "$root/dist" \
    && "$maturin" sdist --out "$root/dist")
else
  echo "== no maturin (pip install maturin): no wheel or sdist"
fi

echo "== SHA256SUMS"
(
  cd dist
  files=$(ls | grep -v '^SHA256SUMS$')
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum $files >SHA256SUMS
  else
    shasum -a 256 $files >SHA256SUMS # macOS
  fi
  cat SHA256SUMS
)
