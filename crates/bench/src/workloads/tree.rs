//! Directory trees like filebench's filesets: `files` files spread over
//! directories holding about `width` entries each (files and subdirectories
//! mixed), and a shared work queue for walking them with several threads.

use std::sync::{Condvar, Mutex};

use crate::target::{BenchFs, Result};

/// A planned tree; `dirs` lists parents before children.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    pub dirs: Vec<String>,
    pub files: Vec<String>,
}

/// Plans a tree of `files` files under `root` (not included in `dirs`).
/// A directory with more than `width` files to hold has `width` entries:
/// some files and up to `width - 1` subdirectories sharing the rest, so
/// depth grows as log(files).
pub fn plan(root: &str, files: usize, width: usize) -> Tree {
    let mut tree = Tree::default();
    place(&mut tree, root, files, width.max(2));
    tree
}

fn place(tree: &mut Tree, dir: &str, n: usize, width: usize) {
    if n <= width {
        for _ in 0..n {
            let i = tree.files.len();
            tree.files.push(format!("{dir}/f{i}"));
        }
        return;
    }
    // As few subdirectories as can hold the rest, so leaves come out full.
    let subdirs = (width - 1).min((n - width).div_ceil(width - 1));
    let here = width - subdirs;
    place(tree, dir, here, width);
    let rest = n - here;
    for k in 0..subdirs {
        let sub = format!("{dir}/d{}", tree.dirs.len());
        tree.dirs.push(sub.clone());
        place(tree, &sub, rest / subdirs + usize::from(k < rest % subdirs), width);
    }
}

/// Creates the planned directories, then the files with `size(i)` bytes
/// each from `buf` (repeated).
pub fn create(fs: &dyn BenchFs, tree: &Tree, size: impl Fn(usize) -> u64, buf: &[u8]) -> Result<()> {
    for d in &tree.dirs {
        fs.mkdir(d)?;
    }
    for (i, f) in tree.files.iter().enumerate() {
        super::write_file(fs, f, size(i), buf)?;
    }
    Ok(())
}

/// Directories still to visit, shared by the walking threads. A thread
/// takes one, lists it and hands back its subdirectories; the walk ends
/// when the stack is empty and no thread holds a directory.
pub struct WalkQueue {
    state: Mutex<WalkState>,
    cv: Condvar,
}

struct WalkState {
    todo: Vec<String>,
    busy: usize,
    aborted: bool,
}

impl WalkQueue {
    pub fn new(root: &str) -> WalkQueue {
        let state = WalkState { todo: vec![root.to_string()], busy: 0, aborted: false };
        WalkQueue { state: Mutex::new(state), cv: Condvar::new() }
    }

    /// The next directory to list, or None when the walk is over.
    pub fn next(&self) -> Option<String> {
        let mut s = self.state.lock().unwrap();
        loop {
            if s.aborted {
                return None;
            }
            if let Some(d) = s.todo.pop() {
                s.busy += 1;
                return Some(d);
            }
            if s.busy == 0 {
                return None;
            }
            s = self.cv.wait(s).unwrap();
        }
    }

    /// Finishes a directory taken with `next`, queueing its subdirectories.
    pub fn done(&self, subdirs: Vec<String>) {
        let mut s = self.state.lock().unwrap();
        s.todo.extend(subdirs);
        s.busy -= 1;
        self.cv.notify_all();
    }

    /// Ends the walk for everyone (a thread failed).
    pub fn abort(&self) {
        self.state.lock().unwrap().aborted = true;
        self.cv.notify_all();
    }
}

/// Walks the tree at `root` with `queue` shared by the calling threads,
/// calling `visit(dir)` for each directory; `visit` returns the
/// subdirectories found. Returns once the whole tree is done.
pub fn walk(queue: &WalkQueue, mut visit: impl FnMut(&str) -> Result<Vec<String>>) -> Result<()> {
    while let Some(dir) = queue.next() {
        match visit(&dir) {
            Ok(subdirs) => queue.done(subdirs),
            Err(e) => {
                queue.abort();
                return Err(e);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_width_and_count() {
        let t = plan("r", 50_000, 5);
        assert_eq!(t.files.len(), 50_000);
        let entries = t.files.len() + t.dirs.len();
        let mean = entries as f64 / (t.dirs.len() + 1) as f64;
        assert!((4.0..=5.0).contains(&mean), "mean width {mean}");
        let flat = plan("r", 1000, 1_000_000);
        assert!(flat.dirs.is_empty() && flat.files.len() == 1000);
    }
}
