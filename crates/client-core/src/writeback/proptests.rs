//! Whatever the interleaving of application writes, request sends, server
//! processing, reply order, short writes and server restarts, once every file
//! is flushed the server's stable storage holds exactly what the application
//! wrote: nothing lost, nothing stale.

use std::collections::HashMap;

use proptest::prelude::*;

use super::tests::{Server, Wb};
use super::*;

#[derive(Debug, Clone)]
enum Op {
    Write {
        file: u64,
        off: u64,
        len: u64,
        seed: u8,
    },
    Send,
    /// The server performs a pending request (a WRITE only partly if `short`).
    Process {
        pick: usize,
        short: Option<u16>,
    },
    /// A performed request's reply reaches the client.
    Deliver {
        pick: usize,
    },
    Reboot,
    Flush {
        file: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..2u64, 0..60_000u64, 1..9_000u64, any::<u8>())
            .prop_map(|(file, off, len, seed)| Op::Write { file, off, len, seed }),
        3 => Just(Op::Send),
        3 => (any::<usize>(), prop::option::weighted(0.15, any::<u16>()))
            .prop_map(|(pick, short)| Op::Process { pick, short }),
        3 => any::<usize>().prop_map(|pick| Op::Deliver { pick }),
        1 => Just(Op::Reboot),
        1 => (0..2u64).prop_map(|file| Op::Flush { file }),
    ]
}

enum Reply {
    Write(ReqId, WriteOk),
    Commit(ReqId, [u8; 8]),
}

struct World {
    wb: Wb,
    srv: Server,
    requests: Vec<Action<u64>>,
    replies: Vec<Reply>,
}

impl World {
    fn send(&mut self) {
        while let Some(a) = self.wb.next_action() {
            self.requests.push(a);
        }
    }

    fn process(&mut self, pick: usize, short: Option<u16>) {
        if self.requests.is_empty() {
            return;
        }
        let a = self.requests.swap_remove(pick % self.requests.len());
        let r = match a {
            Action::Write { id, file, offset, data, stable } => {
                let count = short.map(|s| s as usize % data.len()).filter(|&c| c > 0);
                Reply::Write(id, self.srv.write(file, offset, &data, stable, count))
            }
            Action::Commit { id, file } => Reply::Commit(id, self.srv.commit(file)),
        };
        self.replies.push(r);
    }

    fn deliver(&mut self, pick: usize) {
        if self.replies.is_empty() {
            return;
        }
        match self.replies.swap_remove(pick % self.replies.len()) {
            Reply::Write(id, ok) => self.wb.on_write_reply(id, Ok(ok)),
            Reply::Commit(id, verf) => self.wb.on_commit_reply(id, Ok(verf)),
        }
    }
}

fn put(img: &mut Vec<u8>, off: u64, data: &[u8]) {
    let end = off as usize + data.len();
    if img.len() < end {
        img.resize(end, 0);
    }
    img[off as usize..end].copy_from_slice(data);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn flushed_server_image_equals_what_the_application_wrote(
        ops in prop::collection::vec(op(), 1..200),
        streaming in any::<bool>(),
        max_in_flight in 1..6usize,
    ) {
        let settings = WritebackSettings {
            wsize: 4096,
            dirty_budget: 32 * 1024,
            high_watermark: 16 * 1024,
            low_watermark: 8 * 1024,
            max_writes_in_flight: max_in_flight,
            start_writeback_of_full_chunks: streaming,
        };
        let mut w = World { wb: Wb::new(settings), srv: Server::default(), requests: vec![], replies: vec![] };
        let mut model: HashMap<u64, Vec<u8>> = HashMap::new();
        for op in ops {
            match op {
                Op::Write { file, off, len, seed } => {
                    let data: Vec<u8> = (0..len).map(|i| seed.wrapping_add((i % 251) as u8) | 1).collect();
                    if w.wb.write(&file, off, &data) == Admit::Accepted {
                        put(model.entry(file).or_default(), off, &data);
                    }
                }
                Op::Send => w.send(),
                Op::Process { pick, short } => w.process(pick, short),
                Op::Deliver { pick } => w.deliver(pick),
                Op::Reboot => w.srv.reboot(),
                Op::Flush { file } => w.wb.request_flush(&file),
            }
            prop_assert!(w.wb.total_bytes() <= 32 * 1024 || w.wb.total_bytes() <= 9_000);
            prop_assert!(w.wb.in_flight() <= max_in_flight);
        }
        w.wb.request_flush_all();
        let mut rounds = 0;
        loop {
            w.send();
            if w.requests.is_empty() && w.replies.is_empty() {
                break;
            }
            // Answer in a scrambled but deterministic order.
            while !w.requests.is_empty() {
                w.process(rounds * 7 + 3, None);
            }
            while !w.replies.is_empty() {
                w.deliver(rounds * 5 + 1);
            }
            rounds += 1;
            prop_assert!(rounds < 10_000, "writeback does not converge");
        }
        for file in 0..2u64 {
            prop_assert!(w.wb.is_clean(&file));
            prop_assert_eq!(w.wb.take_error(&file), None);
            let got = w.srv.stable.get(&file).cloned().unwrap_or_default();
            let want = model.get(&file).cloned().unwrap_or_default();
            prop_assert!(got == want, "file {} differs: {} vs {} bytes", file, got.len(), want.len());
        }
        prop_assert_eq!(w.wb.total_bytes(), 0);
    }
}
