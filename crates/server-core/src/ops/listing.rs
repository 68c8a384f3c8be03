//! What NFSv3 READDIR/READDIRPLUS and NFSv4 READDIR share: reading a batch
//! of a directory, with or without each entry's object, and judging how
//! many more entries a reply being filled has room for.

use vfs::{Attrs, DirEntry, FileId, Vfs, VfsResult};

/// An entry and, when asked for, the object behind its name.
pub(crate) type Listed = (DirEntry, Option<VfsResult<(FileId, Attrs)>>);

/// Up to `batch` entries after backend cookie `cookie`; with `with_attrs`
/// each carries its object (one backend pass, [`Vfs::readdir_plus`]).
/// Returns the entries and whether the directory ended.
pub(crate) fn read_batch(
    fs: &dyn Vfs,
    dir: FileId,
    cookie: u64,
    batch: usize,
    with_attrs: bool,
) -> VfsResult<(Vec<Listed>, bool)> {
    if with_attrs {
        let rd = fs.readdir_plus(dir, cookie, batch)?;
        Ok((rd.entries.into_iter().map(|e| (e.entry, Some(e.obj))).collect(), rd.eof))
    } else {
        let rd = fs.readdir(dir, cookie, batch)?;
        Ok((rd.entries.into_iter().map(|e| (e, None)).collect(), rd.eof))
    }
}

/// About how many more entries fit in `room` bytes, judged by the `taken`
/// entries that used `used` bytes so far (names and attributes in one
/// directory tend to be alike), never by less than `min_entry` bytes each.
pub(crate) fn entries_that_fit(room: usize, used: usize, taken: usize, min_entry: usize) -> usize {
    let per_entry = used.checked_div(taken).map_or(min_entry, |p| p.max(min_entry)).max(1);
    room / per_entry + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_judged_by_the_entries_taken() {
        assert_eq!(entries_that_fit(1000, 0, 0, 100), 11, "nothing taken: the smallest entry");
        assert_eq!(entries_that_fit(1000, 2000, 10, 100), 6, "200 bytes each so far");
        assert_eq!(entries_that_fit(1000, 500, 10, 100), 11, "never below the smallest entry");
        assert_eq!(entries_that_fit(0, 0, 0, 0), 1);
    }
}
