//! artdb (in progress)
pub mod db {
    pub const TABLE_NAME_LEN_MAX: usize = 255;
}
mod error;
pub mod io;
mod store;
pub use error::{CorruptionKind, Error, Result};
