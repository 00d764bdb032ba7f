//! The mcpmux hub as a peer client of `mcpmux-bench peers`: `bench-peer-hub LOAD_JSON
//! [current-thread]`, its figures as one JSON line.

fn main() -> anyhow::Result<()> {
    mcpmux_bench::peer_client::hub_main(std::env::args().skip(1))
}
