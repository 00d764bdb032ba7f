//! Raw rmcp as a peer client of `mcpmux-bench peers`: `bench-peer-rmcp LOAD_JSON
//! [current-thread]`, its figures as one JSON line; `bench-peer-rmcp one-shot PROGRAM ARGS...`
//! is one call, as `mcpmux call` makes it (`mcpmux-bench cli`).

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("one-shot") {
        return mcpmux_bench::peer_client::rmcp_one_shot(args.skip(1));
    }
    mcpmux_bench::peer_client::rmcp_main(args)
}
