//! glibc's allocator, set for a server whose receive buffers are records
//! of up to a few MiB.
//!
//! A connection reads each record into a buffer sized for the whole
//! fragment, and a 1 MiB WRITE's buffer is freed by the worker that wrote
//! it. glibc serves such sizes with a fresh `mmap` (until its dynamic
//! threshold has grown past them) and gives the top of each heap back to
//! the kernel once more than 128 KiB of it is free, so buffer after buffer
//! was faulted in page by page and zeroed by the kernel: 42,000-310,000
//! page faults in 5 s of 1 MiB WRITEs, against 600-4,000 with the settings
//! below (docs/BENCHMARKS.md, "Receive buffers and the allocator").

use crate::settings::Settings;

/// Applies `malloc_mmap_threshold` and `malloc_trim_threshold` (0 leaves
/// glibc's own, dynamic, choice). Call before other threads start.
pub fn tune(settings: &Settings) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    for (param, value, name) in [
        (libc::M_MMAP_THRESHOLD, settings.malloc_mmap_threshold, "malloc_mmap_threshold"),
        (libc::M_TRIM_THRESHOLD, settings.malloc_trim_threshold, "malloc_trim_threshold"),
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
    let _ = settings;
}
