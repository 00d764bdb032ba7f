#!/usr/bin/env bash
# Builds the debug programs the tests start: mcpmux, mcpmux-conformance, mcpmux-testserver,
# mcpmux-testmodel (the scripted model endpoint of the Python agent tests).
# Every build of them goes through here (scripts/test.sh before the tests, the Python tests,
# conformance/, and the tests' own support in crates/mcpmux-test-support/src/servers.rs):
# another set of packages would build rmcp, reqwest and the library again with other
# features, in the middle of the test run.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${CARGO:-cargo}" build --quiet -p mcpmux-cli -p mcpmux-conformance -p mcpmux-testserver -p mcpmux-testmodel
