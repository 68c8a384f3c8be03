use super::*;

const BOOT: u32 = 0x1234_5678;
const F: FileKey = (1, 7, 1);

fn open_entry(client: u64, owner: &'static str) -> Entry {
    Entry {
        seqid: 1,
        client,
        file: F,
        lease: Default::default(),
        kind: Kind::Open(OpenState {
            owner: Bytes::from_static(owner.as_bytes()),
            access: OPEN4_SHARE_ACCESS_READ,
            deny: 0,
            access_seen: 1 << 1,
            deny_seen: 1,
            confirmed: true,
            locks: vec![],
            store_key: 0,
        }),
    }
}

#[test]
fn special_stateids() {
    let s = |seqid, b: u8| stateid4 { seqid, other: [b; 12] };
    assert_eq!(special(&s(0, 0)), Ok(Some(Special::Anonymous)));
    assert_eq!(special(&s(u32::MAX, 0xff)), Ok(Some(Special::Bypass)));
    assert_eq!(special(&s(1, 0)), Err(nfsstat4::NFS4ERR_BAD_STATEID));
    assert_eq!(special(&s(u32::MAX, 0)), Err(nfsstat4::NFS4ERR_BAD_STATEID));
    assert_eq!(special(&s(0, 0xff)), Err(nfsstat4::NFS4ERR_BAD_STATEID));
    assert_eq!(special(&s(3, 5)), Ok(None));
}

#[test]
fn seqid_rules() {
    let ids = Stateids::default();
    let o = ids.insert(BOOT, 100, 1, open_entry(1, "o")).unwrap();
    ids.bump(&o);
    ids.bump(&o);
    let s = |seqid| stateid4 { seqid, other: o };
    assert_eq!(ids.find(BOOT, 1, Some(1), &s(3)).unwrap().seqid, 3);
    assert!(ids.find(BOOT, 1, Some(1), &s(0)).is_ok());
    assert_eq!(ids.find(BOOT, 0, None, &s(0)).err(), Some(nfsstat4::NFS4ERR_OLD_STATEID));
    assert_eq!(ids.find(BOOT, 1, Some(1), &s(2)).err(), Some(nfsstat4::NFS4ERR_OLD_STATEID));
    assert_eq!(ids.find(BOOT, 1, Some(1), &s(4)).err(), Some(nfsstat4::NFS4ERR_BAD_STATEID));
    // Another client's stateid.
    assert_eq!(ids.find(BOOT, 1, Some(2), &s(3)).err(), Some(nfsstat4::NFS4ERR_BAD_STATEID));
    // Another server instance: an earlier one is stale, a later one forged.
    assert_eq!(ids.find(BOOT + 1, 0, None, &s(3)).err(), Some(nfsstat4::NFS4ERR_STALE_STATEID));
    assert_eq!(ids.find(BOOT + 1, 1, Some(1), &s(3)).err(), Some(nfsstat4::NFS4ERR_BAD_STATEID));
    assert_eq!(ids.find(BOOT - 1, 0, None, &s(3)).err(), Some(nfsstat4::NFS4ERR_BAD_STATEID));
    // The special stateids name no state.
    for sp in [stateid4 { seqid: 0, other: [0; 12] }, stateid4 { seqid: u32::MAX, other: [0xff; 12] }] {
        assert_eq!(ids.find(BOOT, 0, None, &sp).err(), Some(nfsstat4::NFS4ERR_BAD_STATEID));
    }
    // Forged.
    let mut forged = s(1);
    forged.other[11] ^= 0x55;
    assert_eq!(ids.find(BOOT, 1, Some(1), &forged).err(), Some(nfsstat4::NFS4ERR_BAD_STATEID));
    assert_eq!(next_seqid(u32::MAX), 1);
    // Freed.
    ids.remove(&o);
    assert_eq!(ids.find(BOOT, 1, Some(1), &s(3)).err(), Some(nfsstat4::NFS4ERR_BAD_STATEID));
    assert!(!ids.has_state(1));
    assert_eq!(ids.owner_count(1), 0);
}

#[test]
fn limits_and_purge() {
    let ids = Stateids::default();
    ids.insert(BOOT, 2, 0, open_entry(1, "a")).unwrap();
    let mut b = open_entry(1, "b");
    b.file = (1, 8, 1);
    ids.insert(BOOT, 2, 0, b).unwrap();
    assert_eq!(ids.insert(BOOT, 2, 0, open_entry(1, "c")), Err(nfsstat4::NFS4ERR_RESOURCE));
    assert_eq!(ids.insert(BOOT, 2, 1, open_entry(1, "c")), Err(nfsstat4::NFS4ERR_SERVERFAULT));
    ids.insert(BOOT, 2, 0, open_entry(2, "a")).unwrap();
    assert!(ids.has_state(1));
    let first = ids.of_client(1)[0];
    ids.purge_client(1);
    assert!(!ids.has_state(1));
    // A purged client's stateid is expired, not unknown, until the
    // remembered ones overflow the cap (0 here: none).
    let old = stateid4 { seqid: 1, other: first };
    assert_eq!(ids.find(BOOT, 0, None, &old).err(), Some(nfsstat4::NFS4ERR_BAD_STATEID));
    assert!(ids.has_state(2));
    assert_eq!(ids.on_file(F).iter().count(), 1);
    assert_eq!(ids.owner_count(1), 0);
}

#[test]
fn purged_stateids_are_expired_up_to_the_cap() {
    let ids = Stateids { expired_cap: 2, ..Stateids::default() };
    let mut purged = vec![];
    for (client, file) in [(1, 1), (2, 2), (3, 3)] {
        let mut e = open_entry(client, "o");
        e.file = (1, file, 1);
        purged.push(stateid4 { seqid: 1, other: ids.insert(BOOT, 10, 0, e).unwrap() });
        ids.purge_client(client);
    }
    assert_eq!(ids.find(BOOT, 0, None, &purged[0]).err(), Some(nfsstat4::NFS4ERR_BAD_STATEID));
    assert_eq!(ids.find(BOOT, 0, None, &purged[1]).err(), Some(nfsstat4::NFS4ERR_EXPIRED));
    assert_eq!(ids.find(BOOT, 0, None, &purged[2]).err(), Some(nfsstat4::NFS4ERR_EXPIRED));
}

#[test]
fn owner_seqids() {
    let ids = Stateids::default();
    let k = OwnerKey { client: 1, owner: Bytes::from_static(b"o") };
    ids.ensure_owner(OwnerSort::Open, &k, 10, 0).unwrap();
    assert!(matches!(ids.seqid_check(OwnerSort::Open, &k, 17), Ok(SeqCheck::Go)));
    ids.seqid_record(OwnerSort::Open, &k, 17, nfsstat4::NFS4ERR_NOENT, Replay::Close(Err(nfsstat4::NFS4ERR_NOENT)));
    assert!(matches!(ids.seqid_check(OwnerSort::Open, &k, 18), Ok(SeqCheck::Go)));
    assert!(matches!(
        ids.seqid_check(OwnerSort::Open, &k, 17),
        Ok(SeqCheck::Replay(Replay::Close(Err(nfsstat4::NFS4ERR_NOENT))))
    ));
    assert_eq!(ids.seqid_check(OwnerSort::Open, &k, 19).err(), Some(nfsstat4::NFS4ERR_BAD_SEQID));
    // Errors that do not advance the seqid leave it.
    ids.seqid_record(
        OwnerSort::Open,
        &k,
        18,
        nfsstat4::NFS4ERR_BAD_STATEID,
        Replay::Close(Err(nfsstat4::NFS4ERR_BAD_STATEID)),
    );
    assert!(matches!(ids.seqid_check(OwnerSort::Open, &k, 18), Ok(SeqCheck::Go)));
    // Owner limit: idle owners give way.
    let k2 = OwnerKey { client: 1, owner: Bytes::from_static(b"p") };
    ids.ensure_owner(OwnerSort::Open, &k2, 1, 0).unwrap();
    assert!(!ids.owner_confirmed(&k) && ids.owner_count(1) == 1);
}
