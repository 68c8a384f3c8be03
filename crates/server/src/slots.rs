//! A bounded count of things running at once (requests in place, threads
//! polling): take a slot if fewer than the limit are taken, give it back
//! when done.

use std::sync::atomic::{AtomicUsize, Ordering};

/// One taken slot of `count`; given back when dropped.
pub struct Slot<'a>(&'a AtomicUsize);

impl<'a> Slot<'a> {
    /// A slot of `count` if fewer than `max` are taken now.
    pub fn take(count: &'a AtomicUsize, max: usize) -> Option<Slot<'a>> {
        count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1)).ok()?;
        Some(Slot(count))
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_max_and_given_back() {
        let count = AtomicUsize::new(0);
        let a = Slot::take(&count, 2).unwrap();
        let _b = Slot::take(&count, 2).unwrap();
        assert!(Slot::take(&count, 2).is_none());
        drop(a);
        assert!(Slot::take(&count, 2).is_some());
        assert!(Slot::take(&count, 0).is_none());
    }
}
