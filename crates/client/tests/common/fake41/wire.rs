//! The fake's sockets: one task per connection reading RPC records
//! (calls from the client, replies to the fake's callbacks) and a writer
//! task per connection, so a held or queued reply never stops reading.

use std::sync::Arc;

use bytes::Bytes;
use proto::framer::{record_header, RecordDecoder};
use proto::nfs4::{CB_COMPOUND4res, COMPOUND4args};
use proto::rpc::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};
use xdr::{Decode, Decoder, Encode, Encoder};

use super::state::{ConnRec, Reply};
use super::Shared;

const NFS4_PROGRAM: u32 = 100003;

fn framed(msg: &rpc_msg, body: Option<Bytes>) -> Vec<Bytes> {
    let mut e = Encoder::new();
    msg.encode(&mut e);
    let mut segs = e.into_segments();
    segs.extend(body);
    let len: usize = segs.iter().map(Bytes::len).sum();
    let mut out = vec![Bytes::copy_from_slice(&record_header(len, true))];
    out.extend(segs);
    out
}

fn none() -> opaque_auth {
    opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() }
}

fn reply_record(xid: u32, reply_data: reply_data, body: Option<Bytes>) -> Vec<Bytes> {
    let body_ = reply_body::MSG_ACCEPTED(accepted_reply { verf: none(), reply_data });
    framed(&rpc_msg { xid, body: rpc_msg_body::REPLY(body_) }, body)
}

/// An accepted, successful reply carrying `results`.
pub(super) fn success_record(xid: u32, results: Bytes) -> Vec<Bytes> {
    reply_record(xid, reply_data::SUCCESS, Some(results))
}

/// A call from the fake to the client (the back channel).
pub(super) fn call_record(xid: u32, prog: u32, proc_: u32, args: Bytes) -> Vec<Bytes> {
    let call = call_body { rpcvers: 2, prog, vers: 1, proc: proc_, cred: none(), verf: none() };
    framed(&rpc_msg { xid, body: rpc_msg_body::CALL(call) }, Some(args))
}

/// Bytes no COMPOUND4res decodes from: a status, then a tag longer than
/// the record.
fn garbage() -> Bytes {
    Bytes::from_static(&[0, 0, 0, 0, 0xff, 0xff, 0xff, 0xf0, 1, 2, 3])
}

pub(super) async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    let mut next = 0;
    while let Ok((sock, _)) = listener.accept().await {
        let _ = sock.set_nodelay(true);
        next += 1;
        tokio::spawn(serve(next, sock, shared.clone()));
    }
}

async fn serve(id: u64, sock: TcpStream, shared: Arc<Shared>) {
    let (mut rd, mut wr) = sock.into_split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<Bytes>>();
    let kill = Arc::new(Notify::new());
    shared.state.lock().conns.insert(id, ConnRec { out: tx.clone(), kill: kill.clone() });
    let writer = tokio::spawn(async move {
        while let Some(record) = rx.recv().await {
            for seg in record {
                if wr.write_all(&seg).await.is_err() {
                    return;
                }
            }
        }
        // Every sender gone: the write half closes as it drops.
    });
    let mut framer = RecordDecoder::new(16 << 20);
    let crashed = 'conn: loop {
        tokio::select! {
            r = rd.read_buf(framer.buffer_mut()) => match r {
                Ok(0) | Err(_) => break 'conn false,
                Ok(_) => loop {
                    match framer.next_record() {
                        Ok(Some(record)) => {
                            if !on_record(id, record, &shared, &tx) {
                                break 'conn false;
                            }
                        }
                        Ok(None) => break,
                        Err(_) => break 'conn false,
                    }
                },
            },
            _ = kill.notified() => break 'conn true,
        }
    };
    shared.state.lock().conns.remove(&id);
    drop(tx);
    if crashed {
        // A server that dies sends nothing more.
        writer.abort();
    } else {
        // What was answered before still goes out, then the close.
        let _ = writer.await;
    }
    shared.changed.notify_waiters();
}

/// Handles one record; false closes the connection.
fn on_record(conn: u64, record: Bytes, shared: &Shared, tx: &mpsc::UnboundedSender<Vec<Bytes>>) -> bool {
    let mut d = Decoder::new(record);
    let Ok(msg) = rpc_msg::decode(&mut d) else { return false };
    let xid = msg.xid;
    let call = match msg.body {
        rpc_msg_body::CALL(call) => call,
        rpc_msg_body::REPLY(body) => {
            let waiter = shared.state.lock().cb_waiting.remove(&xid);
            let accepted =
                matches!(body, reply_body::MSG_ACCEPTED(accepted_reply { reply_data: reply_data::SUCCESS, .. }));
            if let (Some(w), true) = (waiter, accepted) {
                if let Ok(res) = CB_COMPOUND4res::decode(&mut d) {
                    let _ = w.send(res);
                }
            }
            shared.changed.notify_waiters();
            return true;
        }
    };
    let send = |r: Vec<Bytes>| {
        let _ = tx.send(r);
    };
    if call.prog != NFS4_PROGRAM {
        // No portmapper here: the client falls back to this port.
        send(reply_record(xid, reply_data::default(accept_stat::PROG_UNAVAIL), None));
        return true;
    }
    if call.vers != 4 {
        send(reply_record(xid, reply_data::PROG_MISMATCH(mismatch_info { low: 4, high: 4 }), None));
        return true;
    }
    let keep = match call.proc {
        0 => {
            send(success_record(xid, Bytes::new()));
            true
        }
        1 => match COMPOUND4args::decode(&mut d) {
            Ok(args) => {
                let out = shared.state.lock().compound(conn, xid, args);
                match out {
                    Reply::Send(bytes) => send(success_record(xid, bytes)),
                    Reply::Garbage => send(success_record(xid, garbage())),
                    Reply::Held => {}
                    Reply::Close => return false,
                }
                true
            }
            Err(_) => {
                send(reply_record(xid, reply_data::default(accept_stat::GARBAGE_ARGS), None));
                true
            }
        },
        _ => {
            send(reply_record(xid, reply_data::default(accept_stat::PROC_UNAVAIL), None));
            true
        }
    };
    shared.changed.notify_waiters();
    keep
}
