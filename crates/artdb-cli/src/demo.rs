//! `artdb demo`: artdb's main job on a default database. (Being built by the ART-core issue.)

/// Options of `artdb demo`.
#[derive(clap::Args)]
pub struct Args {
    /// Number of generated keys.
    #[arg(long, default_value_t = 3_000_000)]
    keys: u64,
}

/// Runs the demo.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let _ = args.keys;
    Err("demo is not built yet".into())
}
