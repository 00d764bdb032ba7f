#!/usr/bin/env bash
# Builds the programs we ship and measure (`mcpmux`, the bench, its Rust peer clients and the
# pipe floor) with the `dist` profile and their code laid out in the order it runs, into
# target/ordered/dist/.
#
# A program's memory is mostly its code, and the kernel maps code in 64 KiB runs around each
# page first touched: a hub runs about 1.3 MB of functions but, scattered over a 7 MB text, they
# fault in nearly all of it. So: build once, run each program under callgrind on a short
# workload to list the functions it runs (scripts/callgrind-order.py), and link again with lld
# placing those first (--symbol-ordering-file). The list is made on the spot because symbol
# names carry crate hashes that change with the checkout path and the toolchain; a name the
# build no longer has is skipped, never an error, so a stale list only packs less.
#
# Needs valgrind, node and python3, and rustc's default linker on x86_64 Linux (lld, Rust 1.90
# or later). `target/ordered/dist/mcpmux-bench peers --prebuilt` then measures these builds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
for tool in valgrind node python3; do
    command -v "$tool" >/dev/null || { echo "build-ordered: $tool is needed (apt install $tool)" >&2; exit 1; }
done

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}/ordered"
out="$CARGO_TARGET_DIR/dist"
order="$CARGO_TARGET_DIR/symbol-order.txt"
train="$CARGO_TARGET_DIR/train"
mkdir -p "$train"
touch "$order"
# The same flags on both builds (the list's contents are not part of them), so the second
# build relinks the programs and compiles nothing else: symbol names stay the same.
export RUSTFLAGS="${RUSTFLAGS:-} -C link-arg=-Wl,--symbol-ordering-file=$order -C link-arg=-Wl,--no-warn-symbol-ordering"
programs=(-p mcpmux-cli --bin mcpmux -p mcpmux-bench --bin mcpmux-bench --bin bench-peer-hub --bin bench-peer-rmcp --bin bench-peer-floor)

echo "build-ordered: first build (dist)" >&2
cargo build --quiet --profile dist "${programs[@]}"
if ! grep -aq "Linker: LLD" "$out/mcpmux"; then
    echo "build-ordered: rustc did not link with lld here; --symbol-ordering-file needs it" >&2
    exit 1
fi

echo "build-ordered: listing the functions each program runs (callgrind)" >&2
rm -f "$train"/*.out
profile() { # NAME COMMAND...: one run under callgrind, its output checked, the profile kept
    local name=$1
    shift
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$train/$name.out" "$@" \
        >"$train/$name.stdout" 2>"$train/$name.stderr" || {
        echo "build-ordered: the $name run failed; see $train/$name.stderr" >&2
        exit 1
    }
}
load=$(printf '{"cold":2,"calls":300,"total":640,"in_flight":32,"servers":2,"server":["node","%s"]}' \
    "$root/crates/mcpmux-bench/peers/echo-server.mjs")
for client in hub rmcp; do
    profile "$client" "$out/bench-peer-$client" "$load"
    profile "$client-1t" "$out/bench-peer-$client" "$load" current-thread
done
# The CLI in an empty HOME and folder: no configuration, so the built-in demo server.
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
(
    cd "$home"
    export HOME="$home"
    profile cli-tools "$out/mcpmux" tools
    profile cli-call "$out/mcpmux" call mcp__demo__add '{"a":2,"b":3}'
)
grep -qx 5 "$train/cli-call.stdout" || { echo "build-ordered: mcpmux call printed no 5" >&2; exit 1; }

{
    python3 scripts/callgrind-order.py bench-peer-hub "$train"/hub*.out
    python3 scripts/callgrind-order.py bench-peer-rmcp "$train"/rmcp*.out
    python3 scripts/callgrind-order.py mcpmux "$train"/cli-*.out
} | awk '!seen[$0]++' >"$order.new"
mv "$order.new" "$order"
echo "build-ordered: $(wc -l <"$order") functions to lay out first" >&2

echo "build-ordered: second build (relinks only)" >&2
touch crates/mcpmux-cli/src/main.rs crates/mcpmux-bench/src/main.rs crates/mcpmux-bench/src/bin/*.rs
cargo build --quiet --profile dist "${programs[@]}"
echo "build-ordered: done: $out/{mcpmux,mcpmux-bench,bench-peer-hub,bench-peer-rmcp,bench-peer-floor}" >&2
