//! `Table::stats`: sizes and fill of each level, read from the header (no page is touched).

use crate::table::Table;

/// Size figures of one level.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelStats {
    /// Level number (0 = leaf).
    pub level: usize,
    /// Pages in the level.
    pub pages: u64,
    /// Bytes of those pages (`pages * page_size`).
    pub bytes: u64,
    /// Bytes holding headers, slots, keys and values.
    pub used_bytes: u64,
    /// `used_bytes / bytes`.
    pub fill_factor: f64,
}

/// Size figures of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Pairs in the table.
    pub pairs: u64,
    /// Page size in bytes.
    pub page_size: usize,
    /// Bytes of the file.
    pub file_bytes: u64,
    /// Sum of key lengths.
    pub key_bytes: u64,
    /// Sum of value lengths (inline and large).
    pub value_bytes: u64,
    /// Values stored in the large-value area.
    pub large_value_count: u64,
    /// Bytes of the large-value area.
    pub large_value_bytes: u64,
    /// Levels, leaf first.
    pub levels: Vec<LevelStats>,
}

impl Stats {
    /// Bytes of the leaf level.
    pub fn leaf_bytes(&self) -> u64 {
        self.levels.first().map_or(0, |leaf| leaf.bytes)
    }

    /// Bytes of all branch levels.
    pub fn branch_bytes(&self) -> u64 {
        self.levels.iter().skip(1).map(|level| level.bytes).sum()
    }
}

impl Table {
    /// Pairs, pages and bytes per level, large-value bytes and fill factors.
    pub fn stats(&self) -> Stats {
        let header = &self.header;
        let page_size = header.page_size as u64;
        let levels = header
            .levels
            .iter()
            .enumerate()
            .map(|(level, info)| {
                let bytes = info.page_count * page_size;
                LevelStats {
                    level,
                    pages: info.page_count,
                    bytes,
                    used_bytes: info.used_bytes,
                    fill_factor: if bytes == 0 {
                        0.0
                    } else {
                        info.used_bytes as f64 / bytes as f64
                    },
                }
            })
            .collect();
        Stats {
            pairs: header.pair_count,
            page_size: header.page_size,
            file_bytes: header.file_len,
            key_bytes: header.key_bytes,
            value_bytes: header.value_bytes,
            large_value_count: header.large_count,
            large_value_bytes: header.large_len,
            levels,
        }
    }
}
