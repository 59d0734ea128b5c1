//! group: the commit pipeline, the tail of every commit after its record is written to the log: wait until the
//! log is durable up to it (group commit), then publish in LSN order.
//!
//! ```text
//!  commit lock held                 | no lock that blocks the next transaction
//!  ----------------------------------+-------------------------------------------------------
//!  LSN k assigned, record written,   | wait(k): leader or follower of a log sync;
//!  tree changed, view k built,       |          publish views in LSN order once durable
//!  enqueue(k, view k)                |
//! ```
//!
//! Group commit (leader/follower): a committer whose record is not durable and finds no sync in
//! progress becomes the leader: it notes the highest LSN appended so far, releases the pipeline
//! mutex, syncs the log, and marks everything up to that LSN durable. Committers arriving while
//! a sync runs wait for it; the next leader then syncs everything appended meanwhile in one call.
//! The pipeline mutex is never held across a sync; the commit lock is not held by any waiter.
//!
//! Publication (invariant): a view is published only after every earlier view, and a view of a
//! `Sync` commit only once its LSN is durable; so in `Sync` mode no reader sees a commit that a
//! crash could take back. A `NoSync` view waits for the `Sync` views before it (their sync is
//! already under way), never for a sync of its own.
//!
//! A failed sync poisons the pipeline: the state of the unsynced records is unknown (Linux may
//! even report the next sync as a success), so every waiter and every later commit gets an
//! error until the database is reopened. The view type is generic so this layer names nothing
//! above it.

use crate::error::{Error, FileRole, PoisonCause, Result};
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::VecDeque;

struct Entry<V> {
    lsn: u64,
    needs_durable: bool,
    view: V,
}

struct State<V> {
    appended_lsn: u64,
    durable_lsn: u64,
    published_lsn: u64,
    syncing: bool,
    pending: VecDeque<Entry<V>>,
    /// The first failure of a log write or sync (then every waiter and commit is refused).
    failed: Option<PoisonCause>,
    commits: u64,
    syncs: u64,
}

/// Counters of the pipeline (for `stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PipelineStats {
    /// Commits that went through the log since open.
    pub commits: u64,
    /// Log syncs since open (group commit makes this smaller than `commits`).
    pub syncs: u64,
    /// Highest LSN written to the log.
    pub appended_lsn: u64,
    /// Highest LSN known durable.
    pub durable_lsn: u64,
}

/// What [`Pipeline::wait`] waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitFor {
    /// The commit is published (and durable if it asked to be).
    Published,
    /// Everything up to the LSN is durable and published, whatever each commit asked
    /// (checkpoint, close, an explicit sync).
    DurableAll,
}

/// The commit pipeline's durable/publish stage (see the module docs).
pub struct Pipeline<V> {
    state: Mutex<State<V>>,
    changed: Condvar,
    /// The log's path, for the cause of a failure (`Pipeline::name_log`).
    log_path: std::sync::OnceLock<std::path::PathBuf>,
    /// Told each newly durable LSN (the readers file, for readers in other processes).
    durable_hook: std::sync::OnceLock<DurableHook>,
}

/// What [`Pipeline::set_durable_hook`] installs.
pub type DurableHook = Box<dyn Fn(u64) + Send + Sync>;

impl<V> Pipeline<V> {
    /// A pipeline whose log is durable and published up to `lsn`.
    pub fn new(lsn: u64) -> Pipeline<V> {
        Pipeline {
            state: Mutex::new(State {
                appended_lsn: lsn,
                durable_lsn: lsn,
                published_lsn: lsn,
                syncing: false,
                pending: VecDeque::new(),
                failed: None,
                commits: 0,
                syncs: 0,
            }),
            changed: Condvar::new(),
            log_path: std::sync::OnceLock::new(),
            durable_hook: std::sync::OnceLock::new(),
        }
    }

    /// Names the log file, for the causes of [`Error::Poisoned`].
    pub fn name_log(&self, path: std::path::PathBuf) {
        let _ = self.log_path.set(path);
    }

    /// Calls `hook` with every LSN that becomes durable from now on (once per sync).
    pub fn set_durable_hook(&self, hook: DurableHook) {
        let _ = self.durable_hook.set(hook);
    }

    /// The first failure that poisoned the pipeline, if any.
    pub fn failure(&self) -> Option<PoisonCause> {
        self.state.lock().failed.clone()
    }

    /// Registers the commit of `lsn` (its record is written) with the view to publish. Call
    /// under the commit lock, in LSN order.
    pub fn enqueue(&self, lsn: u64, needs_durable: bool, view: V) {
        let mut state = self.state.lock();
        debug_assert!(lsn > state.appended_lsn, "LSNs are enqueued in order");
        state.appended_lsn = lsn;
        state.commits += 1;
        state.pending.push_back(Entry {
            lsn,
            needs_durable,
            view,
        });
    }

    /// The highest LSN known durable (written into each record as its `synced_lsn`).
    pub fn durable_lsn(&self) -> u64 {
        self.state.lock().durable_lsn
    }

    /// Marks the pipeline failed (a log write failed under the commit lock: `error`), keeping
    /// the first cause.
    pub fn fail(&self, error: &Error) {
        let mut state = self.state.lock();
        self.record_failure(&mut state, error);
        drop(state);
        self.changed.notify_all();
    }

    fn record_failure(&self, state: &mut State<V>, error: &Error) {
        if state.failed.is_none() {
            let path = self.log_path.get().map(std::path::PathBuf::as_path);
            state.failed = Some(PoisonCause::of(
                error,
                "write to the log",
                FileRole::Log,
                path,
            ));
        }
    }

    /// Counters.
    pub fn stats(&self) -> PipelineStats {
        let state = self.state.lock();
        PipelineStats {
            commits: state.commits,
            syncs: state.syncs,
            appended_lsn: state.appended_lsn,
            durable_lsn: state.durable_lsn,
        }
    }

    /// Waits until `lsn` is published (see [`WaitFor`]), leading a log sync (`sync`) when one
    /// is needed and none is running; `publish` is called with each view that becomes visible,
    /// in LSN order, under the pipeline mutex.
    pub fn wait(
        &self,
        lsn: u64,
        wait_for: WaitFor,
        sync: &dyn Fn() -> std::io::Result<()>,
        publish: &mut dyn FnMut(V),
    ) -> Result<()> {
        let mut state = self.state.lock();
        loop {
            if let Some(cause) = &state.failed {
                return Err(cause.refusal());
            }
            publish_ready(&mut state, publish);
            let durable_enough = wait_for == WaitFor::Published || state.durable_lsn >= lsn;
            if state.published_lsn >= lsn && durable_enough {
                return Ok(());
            }
            let needed = durable_needed(&state, lsn, wait_for);
            if needed > state.durable_lsn && !state.syncing {
                self.lead_sync(&mut state, sync)?;
                continue;
            }
            self.changed.wait(&mut state);
        }
    }

    fn lead_sync(
        &self,
        state: &mut MutexGuard<'_, State<V>>,
        sync: &dyn Fn() -> std::io::Result<()>,
    ) -> Result<()> {
        state.syncing = true;
        let target = state.appended_lsn;
        let result = MutexGuard::unlocked(state, sync);
        state.syncing = false;
        self.changed.notify_all();
        match result {
            Ok(()) => {
                state.durable_lsn = state.durable_lsn.max(target);
                state.syncs += 1;
                if let Some(hook) = self.durable_hook.get() {
                    hook(state.durable_lsn);
                }
                Ok(())
            }
            Err(source) => {
                let error = Error::Io {
                    op: "sync the write-ahead log",
                    source,
                };
                self.record_failure(state, &error);
                Err(error)
            }
        }
    }
}

/// The LSN that must be durable before `lsn` can be published.
fn durable_needed<V>(state: &State<V>, lsn: u64, wait_for: WaitFor) -> u64 {
    if wait_for == WaitFor::DurableAll {
        return lsn.min(state.appended_lsn);
    }
    state
        .pending
        .iter()
        .take_while(|entry| entry.lsn <= lsn)
        .filter(|entry| entry.needs_durable)
        .map(|entry| entry.lsn)
        .last()
        .unwrap_or(0)
}

/// Publishes the longest prefix of pending views that may be seen (module docs, invariant).
fn publish_ready<V>(state: &mut State<V>, publish: &mut dyn FnMut(V)) {
    let mut last = None;
    while let Some(front) = state.pending.front() {
        if front.needs_durable && front.lsn > state.durable_lsn {
            break;
        }
        if let Some(entry) = state.pending.pop_front() {
            state.published_lsn = entry.lsn;
            last = Some(entry.view);
        }
    }
    if let Some(view) = last {
        publish(view);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    #[test]
    fn publishes_in_order_only_when_durable() {
        let pipeline: Pipeline<u64> = Pipeline::new(0);
        pipeline.enqueue(1, true, 1);
        pipeline.enqueue(2, false, 2);
        let mut seen = Vec::new();
        let syncs = AtomicU64::new(0);
        let sync = || {
            syncs.fetch_add(1, Ordering::SeqCst);
            Ok(())
        };
        pipeline
            .wait(2, WaitFor::Published, &sync, &mut |v| seen.push(v))
            .unwrap();
        assert_eq!(seen, vec![2], "the last ready view is published once");
        assert_eq!(
            syncs.load(Ordering::SeqCst),
            1,
            "the NoSync view waited for the Sync one"
        );
        pipeline.enqueue(3, false, 3);
        pipeline
            .wait(3, WaitFor::Published, &sync, &mut |v| seen.push(v))
            .unwrap();
        assert_eq!(syncs.load(Ordering::SeqCst), 1, "NoSync alone never syncs");
        pipeline
            .wait(3, WaitFor::DurableAll, &sync, &mut |v| seen.push(v))
            .unwrap();
        assert_eq!(syncs.load(Ordering::SeqCst), 2);
        assert_eq!(seen, vec![2, 3]);
    }

    #[test]
    fn failed_sync_poisons_every_waiter() {
        let pipeline: Pipeline<u64> = Pipeline::new(0);
        pipeline.enqueue(1, true, 1);
        let failing = || Err(std::io::Error::from_raw_os_error(5));
        let error = pipeline
            .wait(1, WaitFor::Published, &failing, &mut |_| {})
            .unwrap_err();
        assert!(matches!(error, Error::Io { .. }));
        let ok = || Ok(());
        match pipeline.wait(1, WaitFor::Published, &ok, &mut |_| {}) {
            Err(Error::Poisoned { cause }) => {
                assert_eq!(cause.op, "sync the write-ahead log");
                assert_eq!(cause.os_code, Some(5));
            }
            other => panic!("a poisoned pipeline must refuse with its cause, got {other:?}"),
        }
    }

    #[test]
    fn concurrent_committers_share_syncs() {
        let pipeline: Arc<Pipeline<u64>> = Arc::new(Pipeline::new(0));
        let commit_lock = Arc::new(Mutex::new(0u64));
        let syncs = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let pipeline = Arc::clone(&pipeline);
                let commit_lock = Arc::clone(&commit_lock);
                let syncs = Arc::clone(&syncs);
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let lsn = {
                            let mut next = commit_lock.lock();
                            *next += 1;
                            pipeline.enqueue(*next, true, *next);
                            *next
                        };
                        let sync = || {
                            syncs.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_micros(200));
                            Ok(())
                        };
                        let mut last = 0;
                        pipeline
                            .wait(lsn, WaitFor::Published, &sync, &mut |v| {
                                assert!(v > last);
                                last = v;
                            })
                            .unwrap();
                        assert!(pipeline.stats().durable_lsn >= lsn);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let stats = pipeline.stats();
        assert_eq!(stats.commits, 400);
        assert!(stats.syncs < stats.commits, "{stats:?}");
    }
}
