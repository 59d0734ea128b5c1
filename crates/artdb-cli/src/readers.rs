//! `artdb readers FILE`: the readers of a database in other processes (its readers file,
//! `FILE.readers`), as LMDB's `mdb_reader_list`; `--clear` clears the slots of readers whose
//! process is gone, as `mdb_reader_check` (a writer ignores those anyway: a slot's liveness is
//! its lock, which dies with its process).

use crate::outln;
use artdb::io::ReadersFile;
use std::path::PathBuf;

/// Options of `artdb readers`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file.
    file: PathBuf,
    /// Clear the slots of readers whose process is gone.
    #[arg(long)]
    clear: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `artdb readers`.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    if !args.file.exists() {
        return Err(format!(
            "{} does not exist; give the path of a database file",
            args.file.display()
        )
        .into());
    }
    let Some(readers) = ReadersFile::of(&args.file, false)? else {
        if args.json {
            outln!("{}", serde_json::json!({ "readers": [], "cleared": 0 }))?;
        } else {
            outln!("no readers file: no process has read this database beside a writer")?;
        }
        return Ok(());
    };
    let cleared = if args.clear { readers.clear_dead()? } else { 0 };
    let slots = readers.list()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let published = readers.published();
    if args.json {
        let list: Vec<serde_json::Value> = slots
            .iter()
            .map(|slot| {
                serde_json::json!({
                    "slot": slot.slot,
                    "pid": slot.pid,
                    "generation": slot.generation,
                    "held_secs": now.saturating_sub(slot.since_unix_secs),
                    "alive": slot.alive,
                })
            })
            .collect();
        outln!(
            "{}",
            serde_json::json!({
                "readers": list,
                "cleared": cleared,
                "writer_generation": published.map(|state| state.generation),
            })
        )?;
        return Ok(());
    }
    if let Some(state) = published.filter(|state| state.generation != 0) {
        outln!(
            "newest checkpoint published by a writer: generation {}",
            state.generation
        )?;
    }
    if slots.is_empty() {
        outln!("no readers")?;
    } else {
        outln!(
            "{:>5} {:>8} {:>11} {:>9}  state",
            "slot",
            "pid",
            "checkpoint",
            "held"
        )?;
        for slot in &slots {
            let state = if slot.alive {
                "alive"
            } else {
                "dead (its process is gone; `--clear` clears it)"
            };
            outln!(
                "{:>5} {:>8} {:>11} {:>8}s  {state}",
                slot.slot,
                slot.pid,
                slot.generation,
                now.saturating_sub(slot.since_unix_secs)
            )?;
        }
    }
    if args.clear {
        outln!("cleared {cleared} dead slot(s)")?;
    }
    Ok(())
}
