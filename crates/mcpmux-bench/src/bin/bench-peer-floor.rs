//! The pipe floor beside the peer clients of `mcpmux-bench peers`: `bench-peer-floor
//! LOAD_JSON`, its figures as one JSON line.

fn main() -> anyhow::Result<()> {
    mcpmux_bench::floor::floor_main(std::env::args().skip(1))
}
