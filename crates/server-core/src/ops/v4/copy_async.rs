//! The background half of an asynchronous COPY (RFC 7862 section 15.2.3):
//! the copy runs as a background job of the server ([`crate::Jobs`]), in
//! chunks of `copy_sync_max`,
//! publishing its progress for OFFLOAD_STATUS and checking for
//! OFFLOAD_CANCEL between chunks; at the end the destination is flushed
//! (so the result says FILE_SYNC4) and CB_OFFLOAD tells the client.
//! A server restart ends the copy with the process (and a server stopped
//! in process ends it at the next chunk: the copy holds its state only
//! weakly); the client then finds its copy stateid unknown
//! (OFFLOAD_STATUS says BAD_STATEID) and copies again.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use proto::nfs4::*;
use vfs::{FileId, Stability, Vfs};

use super::status::stat4;
use crate::state::offload::CopyJob;
use crate::state::State4;

/// What one background copy works on.
pub(super) struct Copy {
    pub fs: Arc<dyn Vfs>,
    pub src: FileId,
    pub src_offset: u64,
    pub dst: FileId,
    pub dst_offset: u64,
    pub count: u64,
    pub chunk: u64,
    /// The destination's handle, for CB_OFFLOAD.
    pub dst_fh: nfs_fh4,
    pub writeverf: verifier4,
}

/// Hands `copy` to the server's background jobs; false when it could not
/// be started.
pub(super) fn spawn(jobs: &dyn crate::Jobs, st: &Arc<State4>, job: Arc<CopyJob>, copy: Copy) -> bool {
    let st = Arc::downgrade(st);
    jobs.start("nfsx-copy", Box::new(move || run(&st, &job, &copy)))
}

fn run(st: &Weak<State4>, job: &CopyJob, c: &Copy) {
    let mut done = 0u64;
    let mut status = nfsstat4::NFS4_OK;
    while done < c.count {
        if job.cancel.load(Ordering::Acquire) {
            tracing::debug!(copied = done, "asynchronous COPY cancelled");
            return;
        }
        if st.strong_count() == 0 {
            tracing::debug!(copied = done, "server stopped; asynchronous COPY abandoned");
            return;
        }
        let n = (c.count - done).min(c.chunk);
        let copied = match c.fs.data_ops() {
            Some(o) => o.copy_range(c.src, c.src_offset + done, c.dst, c.dst_offset + done, n, Stability::Unstable),
            None => Err(vfs::VfsError::NotSupported),
        };
        match copied {
            Ok(r) => {
                done += r.count;
                job.copied.store(done, Ordering::Release);
                if r.count < n {
                    // The source ended early (it shrank meanwhile).
                    break;
                }
            }
            Err(e) => {
                status = stat4(e);
                break;
            }
        }
    }
    if status == nfsstat4::NFS4_OK {
        if let Err(e) = c.fs.commit(c.dst, 0, 0) {
            status = stat4(e);
        }
    }
    let Some(st) = st.upgrade() else { return };
    *job.end.lock() = Some((status, st.now()));
    if job.cancel.load(Ordering::Acquire) {
        return;
    }
    let coa_offload_info = if status == nfsstat4::NFS4_OK {
        offload_info4::NFS4_OK(write_response4 {
            wr_callback_id: Vec::new(),
            wr_count: done,
            wr_committed: stable_how4::FILE_SYNC4,
            wr_writeverf: c.writeverf,
        })
    } else {
        offload_info4::default(status, done)
    };
    let args = CB_OFFLOAD4args { coa_fh: c.dst_fh.clone(), coa_stateid: job.stateid.clone(), coa_offload_info };
    if !st.cb_offload(job.client, args) {
        tracing::info!(
            client = format_args!("{:#x}", job.client),
            "CB_OFFLOAD could not be sent; the client can ask with OFFLOAD_STATUS"
        );
    }
}
