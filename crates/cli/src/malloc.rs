//! glibc's allocator, set for a process whose receive buffers are records
//! of up to a few MiB: the server (1 MiB WRITEs) and the client of
//! `nfsx bench` and `nfsx mount` (1 MiB READ replies).
//!
//! Each record is read into a buffer sized for its whole fragment, and the
//! buffer is freed by whoever used the record last. glibc serves such
//! sizes with a fresh `mmap` (until its dynamic threshold has grown past
//! them) and gives the top of each heap back to the kernel once more than
//! 128 KiB of it is free, so buffer after buffer was faulted in page by
//! page and zeroed by the kernel: at the server 42,000-310,000 page faults
//! in 5 s of 1 MiB WRITEs, against 600-4,000 with the settings; at the
//! client 344,000-393,000 in 4 s of four 1 MiB READs in flight, against
//! 53,000-55,000 (docs/BENCHMARKS.md, "Receive buffers and the allocator",
//! "never-zeroed").

/// Sets glibc's `M_MMAP_THRESHOLD` and `M_TRIM_THRESHOLD` to these many
/// bytes (settings `malloc_mmap_threshold` and `malloc_trim_threshold` of
/// the server and of the client); 0 leaves glibc's own, dynamic, choice.
/// Call at start, before other threads exist.
pub fn tune(mmap_threshold: usize, trim_threshold: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    for (param, value, name) in [
        (libc::M_MMAP_THRESHOLD, mmap_threshold, "malloc_mmap_threshold"),
        (libc::M_TRIM_THRESHOLD, trim_threshold, "malloc_trim_threshold"),
    ] {
        if value == 0 {
            continue;
        }
        let Ok(v) = libc::c_int::try_from(value) else {
            tracing::warn!(setting = name, value, "too large for the allocator; left at glibc's default");
            continue;
        };
        // SAFETY: mallopt only changes allocator parameters; it is called
        // at start, before the runtime's threads exist.
        if unsafe { libc::mallopt(param, v) } != 1 {
            tracing::warn!(setting = name, value, "the allocator refused it; left at glibc's default");
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = (mmap_threshold, trim_threshold);
}
