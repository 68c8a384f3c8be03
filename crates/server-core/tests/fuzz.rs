//! 10,000+ random and mutated records: the core must never panic, and
//! every reply it sends must be a well-formed RPC reply to the same xid.

mod common;

use bytes::Bytes;
use common::*;
use proto::nfs3::*;
use xdr::Decoder;

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn corpus(e: &Env) -> Vec<Bytes> {
    let root = e.root();
    let f = e.create_file(&root, "file");
    e.write(&f, 0, &[7u8; 3000], stable_how::FILE_SYNC);
    let d = e.mkdir(&root, "dir");
    for i in 0..20 {
        e.create_file(&d, &format!("e{i}"));
    }
    let at = |dir: &nfs_fh3, n: &str| diropargs3 { dir: dir.clone(), name: name_of(n) };
    let s = sattr3 { mode: Some(0o644), size: Some(10), ..Default::default() };
    let nfs: Vec<(u32, Bytes)> = vec![
        (NFS3_NULL, Bytes::new()),
        (NFS3_GETATTR, xdr::to_bytes(&GETATTR3args { object: f.clone() })),
        (
            NFS3_SETATTR,
            xdr::to_bytes(&SETATTR3args {
                object: f.clone(),
                new_attributes: s.clone(),
                guard: Some(nfstime3 { seconds: 1, nseconds: 2 }),
            }),
        ),
        (NFS3_LOOKUP, xdr::to_bytes(&LOOKUP3args { what: at(&root, "file") })),
        (NFS3_ACCESS, xdr::to_bytes(&ACCESS3args { object: f.clone(), access: 0x3f })),
        (NFS3_READLINK, xdr::to_bytes(&READLINK3args { symlink: f.clone() })),
        (NFS3_READ, xdr::to_bytes(&READ3args { file: f.clone(), offset: 10, count: 2000 })),
        (
            NFS3_WRITE,
            xdr::to_bytes(&WRITE3args {
                file: f.clone(),
                offset: 5,
                count: 4,
                stable: stable_how::DATA_SYNC,
                data: Bytes::from_static(b"abcd"),
            }),
        ),
        (NFS3_CREATE, xdr::to_bytes(&CREATE3args { r#where: at(&d, "c"), how: createhow3::EXCLUSIVE(*b"12345678") })),
        (NFS3_MKDIR, xdr::to_bytes(&MKDIR3args { r#where: at(&d, "m"), attributes: s.clone() })),
        (
            NFS3_SYMLINK,
            xdr::to_bytes(&SYMLINK3args {
                r#where: at(&d, "s"),
                symlink: symlinkdata3 { symlink_attributes: s.clone(), symlink_data: name_of("t") },
            }),
        ),
        (
            NFS3_MKNOD,
            xdr::to_bytes(&MKNOD3args {
                r#where: at(&d, "n"),
                what: mknoddata3::NF3CHR(devicedata3 {
                    dev_attributes: s.clone(),
                    spec: specdata3 { specdata1: 1, specdata2: 2 },
                }),
            }),
        ),
        (NFS3_REMOVE, xdr::to_bytes(&REMOVE3args { object: at(&d, "e1") })),
        (NFS3_RMDIR, xdr::to_bytes(&RMDIR3args { object: at(&root, "dir") })),
        (NFS3_RENAME, xdr::to_bytes(&RENAME3args { from: at(&d, "e2"), to: at(&root, "r") })),
        (NFS3_LINK, xdr::to_bytes(&LINK3args { file: f.clone(), link: at(&d, "l") })),
        (NFS3_READDIR, xdr::to_bytes(&READDIR3args { dir: d.clone(), cookie: 0, cookieverf: [0; 8], count: 600 })),
        (
            NFS3_READDIRPLUS,
            xdr::to_bytes(&READDIRPLUS3args {
                dir: d.clone(),
                cookie: 3,
                cookieverf: [0; 8],
                dircount: 100,
                maxcount: 900,
            }),
        ),
        (NFS3_FSSTAT, xdr::to_bytes(&FSSTAT3args { fsroot: root.clone() })),
        (NFS3_FSINFO, xdr::to_bytes(&FSINFO3args { fsroot: root.clone() })),
        (NFS3_PATHCONF, xdr::to_bytes(&PATHCONF3args { object: root.clone() })),
        (NFS3_COMMIT, xdr::to_bytes(&COMMIT3args { file: f.clone(), offset: 0, count: 0 })),
    ];
    let mut out: Vec<Bytes> = nfs.into_iter().map(|(p, a)| call_record(1, NFS, 3, p, &user(), &a)).collect();
    for p in 0..6 {
        out.push(call_record(2, MOUNT, 3, p, &Cred::None, &xdr::to_bytes(&name_of("/export/dir"))));
    }
    let m2 = proto::portmap::pmap2_mapping { prog: NFS, vers: 3, prot: 6, port: 0 };
    let m3 = proto::portmap::pmap3_mapping {
        prog: NFS,
        vers: 3,
        netid: name_of("tcp"),
        addr: name_of(""),
        owner: name_of(""),
    };
    for p in 0..6 {
        out.push(call_record(3, PMAP, 2, p, &common::root(), &xdr::to_bytes(&m2)));
        out.push(call_record(3, PMAP, 3, p, &common::root(), &xdr::to_bytes(&m3)));
        out.push(call_record(3, PMAP, 4, p + 4, &common::root(), &xdr::to_bytes(&m3)));
    }
    out
}

fn mutate(rng: &mut Rng, rec: &Bytes) -> Bytes {
    let mut b = rec.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(7) {
            0 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            1 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
            2 => b.truncate(rng.below(b.len() + 1)),
            3 => b.extend((0..rng.below(64)).map(|_| rng.next() as u8)),
            // A hostile 32-bit word (lengths, counts, discriminants) at an
            // aligned offset, keeping the xid.
            4 if b.len() >= 8 => {
                let i = 4 + 4 * rng.below((b.len() - 4) / 4);
                let v: u32 = match rng.below(5) {
                    0 => 0,
                    1 => u32::MAX,
                    2 => 0x8000_0000,
                    3 => rng.below(70) as u32,
                    _ => rng.next() as u32,
                };
                if i + 4 <= b.len() {
                    b[i..i + 4].copy_from_slice(&v.to_be_bytes());
                }
            }
            5 if b.len() > 28 => {
                // Program/version/procedure numbers.
                let i = 12 + 4 * rng.below(3);
                b[i..i + 4].copy_from_slice(&(rng.below(25) as u32).to_be_bytes());
            }
            _ => {
                let i = rng.below(b.len() + 1);
                b.splice(i..i, (0..rng.below(16)).map(|_| rng.next() as u8));
            }
        }
    }
    Bytes::from(b)
}

fn check(e: &Env, rec: Bytes) {
    let xid = rec.get(..4).map(|x| u32::from_be_bytes([x[0], x[1], x[2], x[3]]));
    let out = e.raw(rec);
    if let Some(segs) = &out.reply {
        let mut d = Decoder::new(join(segs));
        let msg = <proto::rpc::rpc_msg as xdr::Decode>::decode(&mut d).expect("reply header well-formed");
        assert_eq!(Some(msg.xid), xid);
        assert!(matches!(msg.body, proto::rpc::rpc_msg_body::REPLY(_)));
    }
}

#[test]
fn mutated_records_never_panic() {
    let e = env("/export *(rw,insecure,no_root_squash)\n/ro *(ro)\n");
    let corpus = corpus(&e);
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut n = 0;
    while n < 12_000 {
        let base = &corpus[rng.below(corpus.len())];
        check(&e, mutate(&mut rng, base));
        n += 1;
    }
    // Unmutated corpus too, as root and as a user.
    for rec in &corpus {
        check(&e, rec.clone());
    }
}

#[test]
fn random_records_never_panic() {
    let e = rw_env();
    let mut rng = Rng(42);
    for _ in 0..10_000 {
        let len = rng.below(200);
        let mut b: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Half of them look like calls so they get past the first checks.
        if rng.below(2) == 0 && b.len() >= 24 {
            b[4..8].copy_from_slice(&0u32.to_be_bytes());
            b[8..12].copy_from_slice(&2u32.to_be_bytes());
            let prog = [NFS, MOUNT, PMAP][rng.below(3)];
            b[12..16].copy_from_slice(&prog.to_be_bytes());
            b[16..20].copy_from_slice(&(rng.below(5) as u32).to_be_bytes());
            b[20..24].copy_from_slice(&(rng.below(23) as u32).to_be_bytes());
        }
        check(&e, Bytes::from(b));
    }
}
