//! How a [`VerifyReport`] reads to a user: one line per problem and per note, then a summary.
//!
//! A problem is an [`Error`] whose own `Display` is written for the caller of an operation that
//! failed (it ends with the advice to restore from a backup and to run verify); inside verify's
//! own report that advice is noise, so a corruption reads as "byte N: what is wrong" and the
//! advice is given once, in the summary.

use crate::db::VerifyReport;
use crate::error::Error;
use std::fmt;

impl VerifyReport {
    /// One problem as verify reports it: a corruption as `byte N: what` (without the advice its
    /// error's `Display` gives to the caller of a failed operation), anything else as its error
    /// reads.
    ///
    /// ```
    /// use artdb::{CorruptionKind, Error, VerifyReport};
    /// let problem = Error::Corruption { at: 8192, kind: CorruptionKind::PageChecksum };
    /// assert_eq!(VerifyReport::describe(&problem), "byte 8192: page checksum mismatch");
    /// ```
    pub fn describe(problem: &Error) -> String {
        match problem {
            Error::Corruption { at: 0, kind } => kind.to_string(),
            Error::Corruption { at, kind } => format!("byte {at}: {kind}"),
            other => other.to_string(),
        }
    }
}

/// `problem: ...` and `note: ...` lines, then `N tables, M keys checked: K problems` (and, when
/// there are problems, what to do).
///
/// ```
/// use artdb::{Db, Options};
/// let storage = std::sync::Arc::new(artdb::io::MemoryStorage::new()?);
/// let db = Db::create_in(storage, Options::default())?;
/// db.create_table("t")?;
/// let report = db.verify()?;
/// assert_eq!(report.to_string(), "1 table, 0 keys checked: no problems");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for problem in &self.problems {
            writeln!(f, "problem: {}", VerifyReport::describe(problem))?;
        }
        for note in &self.notes {
            writeln!(f, "note: {note}")?;
        }
        let tables = match self.tables_checked {
            1 => "table",
            _ => "tables",
        };
        write!(
            f,
            "{} {tables}, {} keys checked: ",
            self.tables_checked, self.keys_checked
        )?;
        match self.problems.len() {
            0 => f.write_str("no problems"),
            1 => f.write_str("1 problem; restore the file from a backup"),
            count => write!(f, "{count} problems; restore the file from a backup"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CorruptionKind;

    #[test]
    fn a_report_lists_each_problem_and_note_without_the_callers_advice() {
        let report = VerifyReport {
            problems: vec![
                Error::Corruption {
                    at: 12288,
                    kind: CorruptionKind::PageChecksum,
                },
                Error::Corruption {
                    at: 0,
                    kind: CorruptionKind::Invariant("table \"t\": keys out of order".into()),
                },
            ],
            notes: vec!["superblock slot 1 fails its checksum".into()],
            tables_checked: 2,
            keys_checked: 40,
        };
        assert_eq!(
            report.to_string(),
            "problem: byte 12288: page checksum mismatch\n\
             problem: invariant violated: table \"t\": keys out of order\n\
             note: superblock slot 1 fails its checksum\n\
             2 tables, 40 keys checked: 2 problems; restore the file from a backup"
        );
        assert!(!report.to_string().contains("artdb verify"));
    }
}
