//! Parsers of the numeric command-line options: each accepts a whole number in the option's
//! range and refuses anything else (zero where zero makes no sense, a negative number, a value
//! past the range or past `u64::MAX`, a fraction) with a message that states the range. clap
//! prefixes the option's name and exits with code 2 (bad command line), before any file is
//! touched.
//!
//! One parser for every numeric option, instead of clap's ranged parsers, because those report
//! a value past `u64::MAX` as "number too large to fit in target type" without the range.

// The one parser is artdb-raft's, which `artdb serve`'s options share with `artdb-server`.
use artdb_raft::cli::whole_number_in;

/// The most orders `demo --keys` accepts: the demo generates every key in memory first (a
/// vector of about 50 bytes a key, 5 GB at this count), and a larger count would end in an
/// allocation failure minutes in rather than a message at once.
pub const DEMO_KEYS_MAX: u64 = 100_000_000;

/// `demo --keys`: at least one order (the demo's snapshot check reads the first key back).
pub fn demo_keys(text: &str) -> Result<u64, String> {
    whole_number_in(text, 1..=DEMO_KEYS_MAX)
}

/// Any `u64` (seeds, limits: 0 is a limit that shows nothing).
pub fn any_u64(text: &str) -> Result<u64, String> {
    whole_number_in(text, 0..=u64::MAX)
}

/// `shell --page`: pairs per page, at least one (a page of none would never show a pair).
pub fn shell_page(text: &str) -> Result<usize, String> {
    let largest = u64::try_from(usize::MAX).unwrap_or(u64::MAX);
    let page = whole_number_in(text, 1..=largest)?;
    // Within `usize` by the range above.
    Ok(usize::try_from(page).unwrap_or(usize::MAX))
}

/// `bitable build --page-size`: a power of two within the bitable format's limits.
pub fn bitable_page_size(text: &str) -> Result<usize, String> {
    use artdb_bitable::format::{PAGE_SIZE_MAX, PAGE_SIZE_MIN};
    let refusal = || format!("must be a power of two from {PAGE_SIZE_MIN} to {PAGE_SIZE_MAX}");
    let range = PAGE_SIZE_MIN as u64..=PAGE_SIZE_MAX as u64;
    let size = whole_number_in(text, range).map_err(|_| refusal())?;
    match usize::try_from(size) {
        Ok(size) if size.is_power_of_two() => Ok(size),
        _ => Err(refusal()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_parser_accepts_its_range_and_states_it_on_refusal() {
        assert_eq!(demo_keys("1"), Ok(1));
        assert_eq!(demo_keys("100000000"), Ok(DEMO_KEYS_MAX));
        for refused in [
            "0",
            "-1",
            "100000001",
            "18446744073709551616",
            "1e6",
            "",
            " 1",
        ] {
            let message = demo_keys(refused).unwrap_err();
            assert!(
                message.contains("from 1 to 100000000"),
                "{refused}: {message}"
            );
        }
        assert_eq!(any_u64("0"), Ok(0));
        assert_eq!(any_u64("18446744073709551615"), Ok(u64::MAX));
        assert!(any_u64("18446744073709551616").is_err());
        assert_eq!(shell_page("1"), Ok(1));
        assert!(shell_page("0").unwrap_err().contains("from 1 to"));
        assert_eq!(bitable_page_size("512"), Ok(512));
        assert_eq!(bitable_page_size("65536"), Ok(65536));
        for refused in ["0", "-1", "256", "1000", "131072", "18446744073709551616"] {
            let message = bitable_page_size(refused).unwrap_err();
            assert!(
                message.contains("from 512 to 65536"),
                "{refused}: {message}"
            );
        }
    }

    /// Every option whose value is a number (found by the type clap stores for it), by command
    /// path: each is parsed by this module and is in the table of `tests/arguments.rs`, which
    /// runs the binary with values out of its range. A new numeric option fails here until it
    /// is added to this list, and so is a reminder to add it to that table.
    #[test]
    fn every_numeric_option_is_known_and_tested() {
        use clap::CommandFactory;
        use std::any::TypeId;
        fn walk(command: &clap::Command, path: &str, found: &mut Vec<String>) {
            let numeric = [
                TypeId::of::<u8>(),
                TypeId::of::<u16>(),
                TypeId::of::<u32>(),
                TypeId::of::<u64>(),
                TypeId::of::<usize>(),
                TypeId::of::<i32>(),
                TypeId::of::<i64>(),
                TypeId::of::<f32>(),
                TypeId::of::<f64>(),
            ];
            for arg in command.get_arguments() {
                if numeric
                    .iter()
                    .any(|id| arg.get_value_parser().type_id() == *id)
                {
                    found.push(format!("{path} --{}", arg.get_id()));
                }
            }
            for sub in command.get_subcommands() {
                walk(sub, format!("{path} {}", sub.get_name()).trim(), found);
            }
        }
        let mut found = Vec::new();
        walk(&crate::Cli::command(), "", &mut found);
        found.sort();
        let known = [
            "bitable build --page_size",
            "bitable scan --limit",
            // The cluster's options, parsed by artdb-raft's `cli` module, as strictly.
            "cluster add-learner --id",
            "cluster change-membership --voters",
            "cluster scan --limit",
            "count --limit",
            "demo --keys",
            "demo --seed",
            // The hidden reader process the demo starts itself (a u64 of milliseconds).
            "demo-child --reader_ms",
            "scan --limit",
            "serve --heartbeat_ms",
            "serve --id",
            "shell --page",
        ];
        assert_eq!(found, known);
    }
}
