//! The log as a reader of another process follows it: the records a live writer made durable
//! since the reader last looked, read from the reader's copy of the log.

use super::{log_corruption, recovered, Parsed, Recovery, Wal};
use crate::error::{Error, Result};

impl Wal {
    /// A reader beside a live writer: the records after the last one read, up to LSN `limit`
    /// (durable, so each is whole and valid unless the log was rewritten meanwhile, which the
    /// caller tells by the readers file: then it opens afresh). Reads only the log past `end`,
    /// up to offset `upto` (as far as the caller copied it): `Ok(None)` when the records up to
    /// `limit` are not all in it yet (the caller copies more of the log and asks again; nothing
    /// was consumed).
    pub fn follow(&mut self, limit: u64, upto: u64) -> Result<Option<Recovery>> {
        let mut recovery = Recovery::default();
        if self.next_lsn > limit {
            return Ok(Some(recovery));
        }
        let len = self
            .storage
            .len()
            .map_err(Error::io("read the log length"))?;
        // Only what the caller copied: past it the copy holds the log's zero-filled end.
        let region = usize::try_from(len.min(upto).saturating_sub(self.end))
            .map_err(|_| Error::FileTooLarge { len })?;
        let mut bytes = vec![0u8; region];
        self.storage
            .read_at(self.end, &mut bytes)
            .map_err(Error::io("read the log"))?;
        let mut position = 0usize;
        let mut next_lsn = self.next_lsn;
        while next_lsn <= limit {
            match self.parse_at(&bytes, position, next_lsn) {
                Parsed::Record { header, total_len } => {
                    let at = self.end + position as u64;
                    recovery
                        .records
                        .push(recovered(&bytes, position, &header, at)?);
                    next_lsn = header.lsn + 1;
                    position += total_len;
                }
                _ => return Ok(None),
            }
        }
        self.records += recovery.records.len() as u64;
        self.next_lsn = next_lsn;
        self.end += position as u64;
        recovery.log = bytes;
        Ok(Some(recovery))
    }

    /// What [`Wal::follow`] found when the whole log is copied and still lacks a record up to
    /// `limit`, which the writer published as durable: the log is damaged.
    pub fn missing_durable(&self, limit: u64) -> Error {
        log_corruption(
            self.end,
            self.next_lsn,
            format!(
                "record {} is not in the log although the writer published LSN {limit} as \
                 durable",
                self.next_lsn
            ),
        )
    }
}
