//! `Table::verify`: a walk that checks every page from scratch and every cross-page invariant.
//!
//! Checked: each page's checksum and layout (re-validated even if already used); keys strictly
//! increasing within each leaf and across consecutive leaves; each branch level covers the level
//! below exactly once, in order (page `p`'s first child follows page `p - 1`'s last); each branch
//! key equals the first key of the child it separates; large values match their checksums; pair,
//! key-byte and value-byte totals match the header. The walk is iterative (no recursion) and
//! touches each page a bounded number of times (branch keys descend at most `LEVELS_MAX` pages).

use crate::error::{corrupt, CorruptionKind, Result};
use crate::page::{self, compare_keys, Expect};
use crate::table::Table;

impl Table {
    /// Checks every page and the key order across pages; the first violation is returned as
    /// `Error::Corruption` naming its page.
    pub fn verify(&self) -> Result<()> {
        self.forget_verified();
        for level in 0..self.header.levels.len() {
            for index in 0..self.header.levels[level].page_count {
                self.page(level, index)?;
            }
        }
        self.verify_leaves()?;
        for level in 1..self.header.levels.len() {
            self.verify_branch_level(level)?;
        }
        Ok(())
    }

    fn verify_leaves(&self) -> Result<()> {
        let mut previous: Option<&[u8]> = None;
        let (mut pairs, mut key_bytes, mut value_bytes) = (0u64, 0u64, 0u64);
        let start_page = self.header.levels.first().map_or(1, |leaf| leaf.start_page);
        for leaf in 0..self.leaf_pages() {
            let page = self.page(0, leaf)?;
            for slot in 0..page.count() {
                let key = page.key(slot);
                if previous.is_some_and(|previous| compare_keys(previous, key).is_ge()) {
                    return corrupt(start_page + leaf, CorruptionKind::KeyOrder);
                }
                previous = Some(key);
                let value = self.resolve(leaf, page.value(slot))?;
                pairs += 1;
                key_bytes += key.len() as u64;
                value_bytes += value.len() as u64;
            }
        }
        let header = &self.header;
        if pairs != header.pair_count
            || key_bytes != header.key_bytes
            || value_bytes != header.value_bytes
        {
            return corrupt(0, CorruptionKind::PairCount);
        }
        Ok(())
    }

    fn verify_branch_level(&self, level: usize) -> Result<()> {
        let info = self.header.levels[level];
        let children = self.header.levels[level - 1].page_count;
        let mut next_child = 0u64;
        for index in 0..info.page_count {
            let page_number = info.start_page + index;
            let page = self.page(level, index)?;
            if page.first_child() != next_child {
                return corrupt(page_number, CorruptionKind::PageLayout("first_child"));
            }
            for slot in 0..page.count() {
                let child = page.first_child() + slot as u64 + 1;
                if page.key(slot) != self.first_key_of(level - 1, child)? {
                    return corrupt(page_number, CorruptionKind::KeyOrder);
                }
            }
            next_child = page.first_child() + page.count() as u64 + 1;
        }
        if next_child != children {
            return corrupt(info.start_page, CorruptionKind::PageLayout("first_child"));
        }
        Ok(())
    }

    /// Validates one page from scratch without touching the first-use marks (fuzzing, tools).
    pub fn check_page(&self, level: usize, index: u64) -> Result<()> {
        let Some(info) = self.header.levels.get(level) else {
            return Ok(());
        };
        if index >= info.page_count {
            return Ok(());
        }
        let page_number = info.start_page + index;
        let page_size = self.header.page_size;
        let start = page_number as usize * page_size;
        let expect = Expect {
            page_number,
            index,
            level,
            children_available: level
                .checked_sub(1)
                .map_or(0, |below| self.header.levels[below].page_count),
            large_len: self.header.large_len,
        };
        page::validate(&self.data()[start..start + page_size], &expect)
    }
}
