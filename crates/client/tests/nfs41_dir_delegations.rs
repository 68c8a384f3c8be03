//! Directory delegations (RFC 8881 section 10.9) against the scripted
//! fake server on tokio's paused clock: asked for at the second listing,
//! listings, LOOKUPs and GETATTRs answered without a call while held,
//! CB_NOTIFY applied in place, bad notifications answered with the RFC's
//! errors, a recall, and the loss of every delegation when SEQUENCE says
//! state was revoked. The client caches nothing by time here (`noac`), so
//! whatever is answered without a call is answered by the delegation.

#[path = "common/fake41/mod.rs"]
mod fake41;

use bytes::Bytes;
use client::{Client, ClientSettings};
use fake41::{within, Fake, Match};
use proto::dir_notify::{encode, DirChange};
use proto::nfs4::*;

fn settings() -> ClientSettings {
    let mut s = fake41::virtual_settings();
    s.attr_cache.noac = true;
    s
}

async fn mount(fake: &Fake) -> Client {
    Client::connect(&fake.url(), settings()).await.expect("mount")
}

fn export() -> Bytes {
    Bytes::from_static(b"/export")
}

/// The operations sent since `mark` but those naming an object
/// (PUTFH...) and the binding of new connections.
fn calls(fake: &Fake, mark: usize) -> Vec<nfs_opnum4> {
    use nfs_opnum4::*;
    let seen = fake.since(mark);
    let ops = seen.iter().flat_map(|s| s.ops.iter().map(|o| o.discriminant()));
    ops.filter(|o| !matches!(o, OP_PUTFH | OP_PUTROOTFH | OP_GETFH | OP_SAVEFH | OP_BIND_CONN_TO_SESSION)).collect()
}

async fn names(c: &Client) -> Vec<String> {
    let mut n: Vec<String> = c.readdir("").await.unwrap().into_iter().map(|e| e.name).collect();
    n.sort();
    n
}

/// A fake with files a and b whose client holds a delegation on the
/// export, its listing cached.
async fn delegated() -> (Fake, Client) {
    let fake = Fake::start(|s| {
        s.dir_delegations = true;
        s.put_file("a", b"1");
        s.put_file("b", b"22");
    })
    .await;
    let c = mount(&fake).await;
    assert_eq!(names(&c).await, ["a", "b"]);
    let mark = fake.mark();
    assert_eq!(names(&c).await, ["a", "b"]);
    assert!(calls(&fake, mark).contains(&nfs_opnum4::OP_GET_DIR_DELEGATION), "asked at the second listing");
    assert!(c.nfs41().unwrap().has_dir_delegation(&export()));
    (fake, c)
}

fn entry(fake: &Fake, name: &str) -> notify_entry4 {
    let mut mask = vec![FATTR4_FILEHANDLE];
    mask.extend_from_slice(client_core::v41::attrs::STAT);
    let ne_attrs = fake.with(|s| s.entry_attrs(name, &proto::bitmap4::of(&mask)));
    notify_entry4 { ne_file: Bytes::copy_from_slice(name.as_bytes()), ne_attrs }
}

/// The export's attributes, as DIR_ATTRS carries them after entry changes.
fn dir_entry(fake: &Fake) -> notify_entry4 {
    let ne_attrs = fake.with(|s| s.export_attrs(&proto::bitmap4::of(client_core::v41::attrs::STAT)));
    notify_entry4 { ne_file: Bytes::new(), ne_attrs }
}

fn bare(name: &str) -> notify_entry4 {
    notify_entry4 { ne_file: Bytes::copy_from_slice(name.as_bytes()), ne_attrs: fattr4::default() }
}

fn add(e: notify_entry4) -> notify_add4 {
    notify_add4 {
        nad_old_entry: vec![],
        nad_new_entry: e,
        nad_new_entry_cookie: vec![],
        nad_prev_entry: vec![],
        nad_last_entry: false,
    }
}

fn removed(name: &str) -> notify_remove4 {
    notify_remove4 { nrm_old_entry: bare(name), nrm_old_entry_cookie: 0 }
}

fn notify_status(r: &CB_COMPOUND4res) -> nfsstat4 {
    match r.resarray.get(1) {
        Some(nfs_cb_resop4::OP_CB_NOTIFY(n)) => n.cnr_status,
        other => panic!("no CB_NOTIFY result: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_delegated_directory_is_listed_and_looked_up_without_calls() {
    within(async {
        let (fake, c) = delegated().await;
        let mark = fake.mark();
        assert_eq!(names(&c).await, ["a", "b"]);
        assert_eq!(c.stat("b").await.unwrap().size, 2);
        let err = c.stat("nothing").await.unwrap_err();
        assert!(err.to_string().contains("NOENT"), "{err}");
        assert_eq!(calls(&fake, mark), [], "all from the delegation");
        assert!(c.nfs41().unwrap().counters().dir_calls_saved >= 3);
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn notifications_change_the_cached_directory_in_place() {
    within(async {
        let (fake, c) = delegated().await;
        fake.with(|s| {
            s.put_file("c", b"333");
            s.remove_file("a");
            s.rename_file("b", "z");
        });
        let changes = vec![
            DirChange::Add(add(entry(&fake, "c"))),
            DirChange::Remove(removed("a")),
            DirChange::Rename(notify_rename4 { nrn_old_entry: removed("b"), nrn_new_entry: add(bare("z")) }),
            DirChange::DirAttrs(notify_attr4 { na_changed_entry: dir_entry(&fake) }),
        ];
        assert_eq!(notify_status(&fake.notify(&export(), encode(&changes)).await), nfsstat4::NFS4_OK);
        let mark = fake.mark();
        assert_eq!(names(&c).await, ["c", "z"]);
        assert_eq!(c.stat("c").await.unwrap().size, 3);
        assert_eq!(c.stat("z").await.unwrap().size, 2, "the renamed file");
        assert!(c.stat("a").await.is_err());
        assert_eq!(calls(&fake, mark), []);
        // A write elsewhere: the child's new attributes.
        fake.with(|s| s.put_file("c", b"4444"));
        let grown = DirChange::ChildAttrs(notify_attr4 { na_changed_entry: entry(&fake, "c") });
        assert_eq!(notify_status(&fake.notify(&export(), encode(&[grown])).await), nfsstat4::NFS4_OK);
        let listed = c.readdir("").await.unwrap();
        let cc = listed.iter().find(|e| e.name == "c").unwrap();
        assert_eq!(cc.attrs.as_ref().map(|a| a.size), Some(4));
        assert_eq!(c.stat("c").await.unwrap().size, 4);
        assert_eq!(calls(&fake, mark), []);
        assert!(c.nfs41().unwrap().counters().dir_notifications >= 2);
    })
    .await
}

/// A REMOVE of a name the whole listing lacks: the client's cache was
/// wrong, not the server; it is dropped and read again.
#[tokio::test(start_paused = true)]
async fn a_notification_that_does_not_fit_drops_the_cache() {
    within(async {
        let (fake, c) = delegated().await;
        let bad = encode(&[DirChange::Remove(removed("nobody"))]);
        assert_eq!(notify_status(&fake.notify(&export(), bad).await), nfsstat4::NFS4_OK);
        let mark = fake.mark();
        assert_eq!(names(&c).await, ["a", "b"]);
        assert!(calls(&fake, mark).contains(&nfs_opnum4::OP_READDIR), "read again");
        let mark = fake.mark();
        assert_eq!(names(&c).await, ["a", "b"]);
        assert_eq!(calls(&fake, mark), [], "and held again");
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn undecodable_notifications_are_refused_and_the_delegation_returned() {
    within(async {
        let (fake, c) = delegated().await;
        let mut garbage = encode(&[DirChange::Remove(removed("a"))]);
        garbage[0].notify_vals = garbage[0].notify_vals.slice(..3);
        assert_eq!(notify_status(&fake.notify(&export(), garbage).await), nfsstat4::NFS4ERR_BADXDR);
        fake.until(|s| s.log.iter().any(|l| l.has(nfs_opnum4::OP_DELEGRETURN))).await;
        assert!(!c.nfs41().unwrap().has_dir_delegation(&export()));
        let mark = fake.mark();
        assert_eq!(names(&c).await, ["a", "b"]);
        assert!(calls(&fake, mark).contains(&nfs_opnum4::OP_READDIR));

        // A bit that is no directory notification, on a new delegation.
        let (fake, _c) = delegated().await;
        let mut odd = encode(&[DirChange::Remove(removed("a"))]);
        odd[0].notify_mask = proto::bitmap4::of(&[7]);
        assert_eq!(notify_status(&fake.notify(&export(), odd).await), nfsstat4::NFS4ERR_INVAL);
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn a_notification_for_a_delegation_not_held_is_a_bad_stateid() {
    within(async {
        let (fake, c) = delegated().await;
        let r = fake
            .callback(&export(), |mut stateid, cna_fh| {
                stateid.other[11] ^= 0xff;
                let cna_changes = encode(&[DirChange::Remove(removed("a"))]);
                nfs_cb_argop4::OP_CB_NOTIFY(CB_NOTIFY4args { cna_stateid: stateid, cna_fh, cna_changes })
            })
            .await;
        assert_eq!(notify_status(&r), nfsstat4::NFS4ERR_BAD_STATEID);
        let mark = fake.mark();
        assert_eq!(names(&c).await, ["a", "b"], "the cache is untouched");
        assert_eq!(calls(&fake, mark), []);
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn a_recall_reads_the_directory_again_then_returns_it() {
    within(async {
        let (fake, c) = delegated().await;
        let mark = fake.mark();
        let r = fake.recall(&export()).await;
        assert_eq!(r.status, nfsstat4::NFS4_OK);
        fake.until(|s| s.log.iter().any(|l| l.has(nfs_opnum4::OP_DELEGRETURN))).await;
        let seen = calls(&fake, mark);
        let readdir = seen.iter().position(|o| *o == nfs_opnum4::OP_READDIR);
        let ret = seen.iter().position(|o| *o == nfs_opnum4::OP_DELEGRETURN);
        assert!(readdir.is_some() && readdir < ret, "{seen:?}");
        assert!(!c.nfs41().unwrap().has_dir_delegation(&export()));
    })
    .await
}

/// The server recalls a delegation whose grant has not reached the
/// client yet: the recall waits for it, then the delegation goes back.
#[tokio::test(start_paused = true)]
async fn a_recall_overtaking_the_grant_waits_for_it() {
    within(async {
        let fake = Fake::start(|s| {
            s.dir_delegations = true;
            s.put_file("a", b"1");
        })
        .await;
        let c = mount(&fake).await;
        names(&c).await;
        fake.hold(Some(Match::Op(nfs_opnum4::OP_GET_DIR_DELEGATION)));
        let c2 = c.clone();
        let listing = tokio::spawn(async move { names(&c2).await });
        fake.until(|s| s.held() == 1).await;
        fake.hold(None);
        let release = async {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            fake.release();
        };
        let dir = export();
        let (r, ()) = tokio::join!(fake.recall(&dir), release);
        assert_eq!(r.status, nfsstat4::NFS4_OK, "{r:?}");
        assert_eq!(listing.await.unwrap(), ["a"]);
        fake.until(|s| s.log.iter().any(|l| l.has(nfs_opnum4::OP_DELEGRETURN))).await;
        assert!(!c.nfs41().unwrap().has_dir_delegation(&export()));
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn revoked_state_ends_the_trust_in_every_directory() {
    within(async {
        let (fake, c) = delegated().await;
        fake.with(|s| s.status_flags = SEQ4_STATUS_RECALLABLE_STATE_REVOKED);
        c.nfs41().unwrap().getattr(&export()).await.unwrap();
        assert!(!c.nfs41().unwrap().has_dir_delegation(&export()));
        fake.with(|s| s.status_flags = 0);
        let mark = fake.mark();
        assert_eq!(names(&c).await, ["a", "b"]);
        assert!(calls(&fake, mark).contains(&nfs_opnum4::OP_READDIR));
    })
    .await
}

/// A server without GET_DIR_DELEGATION is asked once.
#[tokio::test(start_paused = true)]
async fn a_server_without_them_is_asked_once() {
    within(async {
        let fake = Fake::start(|s| s.put_file("a", b"1")).await;
        let c = mount(&fake).await;
        let mark = fake.mark();
        for _ in 0..4 {
            assert_eq!(names(&c).await, ["a"]);
        }
        let asked = calls(&fake, mark).iter().filter(|o| **o == nfs_opnum4::OP_GET_DIR_DELEGATION).count();
        assert_eq!(asked, 1);
    })
    .await
}
