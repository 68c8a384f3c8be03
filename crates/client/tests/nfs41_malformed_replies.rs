//! A server (or a proxy) whose COMPOUND replies do not answer what was
//! sent: NFS4_OK with fewer results than operations, results out of
//! order, more results than operations, a failed result under NFS4_OK.
//! Against the scripted fake (`common/fake41`), each call, the mount's
//! included, ends in an error instead of a panic, and the session goes
//! on: the slot of a reply whose SEQUENCE succeeded is used, the next
//! call on it gets no SEQ_MISORDERED.

#[path = "common/fake41/mod.rs"]
mod fake41;

use bytes::Bytes;
use client::nfs41::OpenAccess;
use client::{Client, CreateHow, Sattr};
use fake41::{within, Fake, Fault, Match};
use proto::nfs4::{createhow4, nfs_opnum4 as Op, nfs_resop4, nfsstat4, COMPOUND4res, GETATTR4res};

fn drop_last(r: &mut COMPOUND4res) {
    r.resarray.pop();
}

fn only_sequence(r: &mut COMPOUND4res) {
    r.resarray.truncate(1);
}

fn last_two_swapped(r: &mut COMPOUND4res) {
    if let Some(last) = r.resarray.pop() {
        let at = r.resarray.len().saturating_sub(1);
        r.resarray.insert(at, last);
    }
}

fn last_twice(r: &mut COMPOUND4res) {
    if let Some(last) = r.resarray.last().cloned() {
        r.resarray.push(last);
    }
}

fn failed_under_ok(r: &mut COMPOUND4res) {
    if let Some(last) = r.resarray.last_mut() {
        *last = nfs_resop4::OP_GETATTR(GETATTR4res::default(nfsstat4::NFS4ERR_IO));
    }
}

fn no_sequence(r: &mut COMPOUND4res) {
    r.resarray.remove(0);
}

fn not_matching(e: &client::Error) -> bool {
    matches!(e, client::Error::Decode { .. }) && e.to_string().contains("do not match the operations sent")
}

#[tokio::test(start_paused = true)]
async fn a_short_reply_to_the_mounts_lookup_fails_the_mount_cleanly() {
    within(async {
        let fake = Fake::start(|_| {}).await;
        fake.inject(Match::Op(Op::OP_PUTROOTFH), Fault::Rewrite(drop_last));
        match Client::connect(&fake.url(), fake41::virtual_settings()).await {
            Ok(_) => panic!("a mount on a reply without the root's attributes"),
            Err(e) => assert!(e.to_string().contains("do not match the operations sent"), "{e}"),
        }
        Client::connect(&fake.url(), fake41::virtual_settings()).await.expect("the next mount, answered in full");
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn replies_that_do_not_answer_the_request_are_errors_and_the_session_goes_on() {
    within(async {
        let fake = Fake::start(|_| {}).await;
        let c = Client::connect(&fake.url(), fake41::virtual_settings()).await.expect("mount");
        let n = c.nfs41().expect("v4.1").clone();
        let root = c.root().data.clone();
        let data = Bytes::from_static(b"data");
        let made = n.create(&root, "f", CreateHow::Unchecked(Sattr::default())).await.expect("create");
        let fh = made.obj.expect("a handle").data;

        let rewrites: [fn(&mut COMPOUND4res); 6] =
            [drop_last, only_sequence, last_two_swapped, last_twice, failed_under_ok, no_sequence];
        for (i, rewrite) in rewrites.into_iter().enumerate() {
            let m = fake.mark();
            fake.inject(Match::Op(Op::OP_GETATTR), Fault::Rewrite(rewrite));
            let e = n.getattr(&fh).await.expect_err("not an answer to the GETATTR");
            assert!(not_matching(&e), "rewrite {i}: {e:?}");
            n.getattr(&fh).await.expect("the next call");
            let misordered = fake.since(m).iter().filter(|s| s.status() == nfsstat4::NFS4ERR_SEQ_MISORDERED).count();
            assert_eq!(misordered, 0, "rewrite {i}");
        }

        // Where a short reply used to be indexed past its end: LOOKUP,
        // OPEN with create, the one-compound small-file write (whose CLOSE
        // of the current stateid the fake refuses: the reply spoilt here
        // is that failure's).
        fake.inject(Match::Op(Op::OP_LOOKUP), Fault::Rewrite(drop_last));
        assert!(not_matching(&n.lookup(&root, "f").await.expect_err("short LOOKUP")));
        fake.inject(Match::Op(Op::OP_OPEN), Fault::Rewrite(drop_last));
        let create = Some(createhow4::UNCHECKED4(Default::default()));
        let e = n.open_name(&root, "g", OpenAccess::Both, create).await.expect_err("short OPEN");
        assert!(not_matching(&e), "{e:?}");
        fake.inject(Match::Op(Op::OP_OPEN), Fault::Rewrite(drop_last));
        let e = n.write_new_file(&root, "h", &Sattr::default(), data).await.expect_err("short one-shot write");
        assert!(not_matching(&e), "{e:?}");

        n.getattr(&root).await.expect("the session still serves");
        assert_eq!(fake.with(|s| s.faults_left()), 0);
        assert_eq!(fake.violations(), Vec::<String>::new());
    })
    .await
}
