//! openraft's storage conformance suite (`openraft::testing::Suite::test_all`) on the artdb log
//! store and state machine, each test on a fresh database file in a temporary directory.

use artdb_raft::{LogStore, StateMachine, TypeConfig};
use openraft::testing::{StoreBuilder, Suite};
use openraft::StorageError;

struct ArtdbStoreBuilder;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, tempfile::TempDir> for ArtdbStoreBuilder {
    async fn build(
        &self,
    ) -> Result<(tempfile::TempDir, LogStore, StateMachine), StorageError<u64>> {
        let dir = tempfile::tempdir().map_err(|e| {
            StorageError::from_io_error(
                openraft::ErrorSubject::Store,
                openraft::ErrorVerb::Write,
                e,
            )
        })?;
        let (log_store, state_machine) =
            artdb_raft::open(dir.path().join("node.artdb"), artdb::Options::default()).map_err(
                |e| {
                    StorageError::from_io_error(
                        openraft::ErrorSubject::Store,
                        openraft::ErrorVerb::Write,
                        std::io::Error::other(e.to_string()),
                    )
                },
            )?;
        Ok((dir, log_store, state_machine))
    }
}

#[test]
fn conformance_suite() {
    if let Err(error) = Suite::test_all(ArtdbStoreBuilder) {
        panic!("the conformance suite failed: {error}");
    }
}
