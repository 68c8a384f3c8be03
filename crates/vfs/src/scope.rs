//! The extent of one request on one thread, for what a backend may reuse
//! between the calls a request makes.
//!
//! The protocol layer resolves every handle it is given (for the
//! permission check and the pre-operation attributes) and then asks the
//! backend to act on that same object, which would resolve it once more;
//! an NFSv4 LOOKUP is followed by a GETATTR of what it found. Inside a
//! [`RequestScope`] a backend may keep what it just learnt about an object
//! for the next call of the same request on the same thread, and nothing
//! it keeps outlives the scope: the next request starts from the file
//! system again, so a change made behind the server's back is seen as
//! before, and no fd is held past the request.

use std::cell::Cell;
use std::marker::PhantomData;

thread_local! {
    /// The scope the thread is in (0: none).
    static CURRENT: Cell<u64> = const { Cell::new(0) };
    /// The last scope number given out on this thread.
    static ISSUED: Cell<u64> = const { Cell::new(0) };
}

/// One request on this thread; drop it when the request's reply is made.
/// Not `Send`: a scope belongs to the thread that entered it.
#[must_use = "the scope ends when dropped"]
pub struct RequestScope {
    outer: u64,
    _thread: PhantomData<*const ()>,
}

impl RequestScope {
    pub fn enter() -> RequestScope {
        let id = ISSUED.get().wrapping_add(1).max(1);
        ISSUED.set(id);
        RequestScope { outer: CURRENT.replace(id), _thread: PhantomData }
    }
}

impl Drop for RequestScope {
    fn drop(&mut self) {
        CURRENT.set(self.outer);
        crate::localfs::forget_recent();
    }
}

/// The scope this thread is in, if any.
pub(crate) fn current() -> Option<u64> {
    match CURRENT.get() {
        0 => None,
        id => Some(id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_end() {
        assert_eq!(current(), None);
        let a = RequestScope::enter();
        let outer = current().unwrap();
        {
            let _b = RequestScope::enter();
            assert_ne!(current(), Some(outer), "a nested scope is a new one");
        }
        assert_eq!(current(), Some(outer));
        drop(a);
        assert_eq!(current(), None);
    }
}
