//! W2: see `shared/BENCHMARKS.md`. (Being built by its issue.)

/// Options of the W2 workload.
#[derive(clap::Args)]
pub struct Args {
    /// Run at the quick (CI) scale.
    #[arg(long)]
    quick: bool,
}

/// Runs W2.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let _ = args.quick;
    Err("w2 is not built yet".into())
}
