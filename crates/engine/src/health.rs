//! Whether the store may write (ARCHITECTURE: after a failed write or fsync the store refuses
//! writes until reopened), in one type: every write path asks [`Health::refuses`] first, and
//! every failure goes through [`Health::fail`] or one of the other ways below.

/// The store's standing as a writer.
#[derive(Debug, Default)]
pub(crate) struct Health {
    /// A write or fsync failed (or apply accepted what the log cannot hold): what reached
    /// the disk is not known, so nothing more is written until the store is reopened.
    failed: bool,
    /// Set while a commit or an update is changing the store: still set afterwards only if
    /// one panicked half way (the store then refuses writes, as after a failed write).
    busy: bool,
    /// What failed after a commit had become durable (a lagged checkpoint), for the caller.
    deferred: Option<String>,
    /// A checkpoint that had to stand in for a commit's record (the ring full) failed: the
    /// state in memory is ahead of the newest checkpoint and the log, and every commit
    /// writes a checkpoint (only that) until one is written. Why, for the caller.
    must_checkpoint: Option<String>,
}

impl Health {
    /// A write failed: refuse writes from now on.
    pub(crate) fn fail(&mut self) {
        self.failed = true;
    }

    /// A write failed after the commit it followed had become durable: that commit stands,
    /// later writes are refused, and `why` is kept for the caller.
    pub(crate) fn fail_after_commit(&mut self, why: String) {
        self.failed = true;
        self.deferred = Some(why);
    }

    pub(crate) fn failed(&self) -> bool {
        self.failed
    }

    /// Whether writes are refused: a failure, or a change that panicked half way.
    pub(crate) fn refuses(&self) -> bool {
        self.failed || self.busy
    }

    /// A change to the store begins: until [`Health::end`], a panic leaves it refusing.
    pub(crate) fn begin(&mut self) {
        self.busy = true;
    }

    pub(crate) fn end(&mut self) {
        self.busy = false;
    }

    pub(crate) fn deferred(&self) -> Option<&str> {
        self.deferred.as_deref()
    }

    /// A checkpoint standing in for a commit failed for want of room (`why`): every commit
    /// writes one until one is written.
    pub(crate) fn owe_checkpoint(&mut self, why: String) {
        self.must_checkpoint = Some(why);
    }

    /// Why a checkpoint is owed, if one is.
    pub(crate) fn owed_checkpoint(&self) -> Option<&str> {
        self.must_checkpoint.as_deref()
    }

    /// A checkpoint was written; whether one had been owed.
    pub(crate) fn checkpoint_written(&mut self) -> bool {
        self.must_checkpoint.take().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_stays_and_a_panicked_change_refuses() {
        let mut h = Health::default();
        assert!(!h.refuses());
        h.begin();
        assert!(
            h.refuses(),
            "a change under way (or one that panicked) refuses writes"
        );
        h.end();
        assert!(!h.refuses());
        h.owe_checkpoint("no room".into());
        assert_eq!(h.owed_checkpoint(), Some("no room"));
        assert!(h.checkpoint_written() && !h.checkpoint_written());
        h.fail_after_commit("EIO".into());
        assert!(h.refuses() && h.failed());
        assert_eq!(h.deferred(), Some("EIO"));
        h.begin();
        h.end();
        assert!(h.refuses(), "nothing but a reopen clears a failure");
    }
}
