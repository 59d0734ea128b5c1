//! `artdb table create|drop|list FILE [NAME]`: the tables of a database file.
//!
//! `create` makes the file if it is missing (as every command that writes does); `drop` and
//! `list` never make one. Each change is one durable commit.

use crate::dbcommon::{check_table_name, Exit};
use crate::outln;
use artdb::Db;
use std::path::PathBuf;

type BoxError = Box<dyn std::error::Error>;

/// The `artdb table` subcommands.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Create an empty table (and the file, if it is missing).
    #[command(after_help = "Example: artdb table create my.artdb users")]
    Create(NameArgs),
    /// Drop a table and every pair in it.
    #[command(after_help = "Example: artdb table drop my.artdb users")]
    Drop(NameArgs),
    /// List the tables and how many keys each has.
    #[command(after_help = "Example: artdb table list my.artdb")]
    List(ListArgs),
}

/// Options of `artdb table create` and `artdb table drop`.
#[derive(clap::Args)]
pub struct NameArgs {
    /// The database file.
    file: PathBuf,
    /// The table.
    name: String,
}

/// Options of `artdb table list`.
#[derive(clap::Args)]
pub struct ListArgs {
    /// The database file.
    file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs an `artdb table` subcommand.
pub fn run(command: Command) -> Result<(), BoxError> {
    match command {
        Command::Create(args) => {
            check_table_name(&args.name)?;
            let db = crate::dbcommon::open_or_create(&args.file)?;
            if db.table_names().contains(&args.name) {
                return Err(format!("table {:?} already exists", args.name).into());
            }
            db.create_table(&args.name)?;
            db.close()?;
            outln!("created table {:?}", args.name)?;
        }
        Command::Drop(args) => {
            let db = Db::open(&args.file, crate::dbcommon::options_no_checkpoint_on_drop())?;
            if !db.table_names().contains(&args.name) {
                return Err(Box::new(Exit {
                    code: 1,
                    message: format!("no table {:?} (artdb table list shows them)", args.name),
                }));
            }
            db.drop_table(&args.name)?;
            db.close()?;
            outln!("dropped table {:?}", args.name)?;
        }
        Command::List(args) => {
            let db = Db::open(&args.file, crate::dbcommon::options_read_only())?;
            let read = db.read();
            let mut tables = Vec::new();
            for name in read.table_names() {
                let keys = read.table(&name)?.len();
                if args.json {
                    tables.push(serde_json::json!({ "name": name, "keys": keys }));
                } else {
                    outln!("{name}\t{keys} keys")?;
                }
            }
            if args.json {
                outln!("{}", serde_json::Value::Array(tables))?;
            }
        }
    }
    Ok(())
}
