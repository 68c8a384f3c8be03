//! NFSv3 locks through `nfsx mount`s, as programs take them (fcntl, by a
//! Python child on each mount): blocked locks granted by the server's
//! NLM_GRANTED through two mounts of one host, whose lock services share
//! the portmapper's entry; a killed mount's locks freed as soon as the
//! next mount starts; locks reclaimed by both mounts after a `kill -9` of
//! the server, with a third client held off during the grace period.
//!
//! The server's built-in portmapper (on its own port) stands for this
//! host's: the mounts register there (`[nlm] portmap`) and the server
//! looks them up there (`[core.nlm] client_portmap_port`).
//!
//! Needs /dev/fuse, fusermount3 and python3.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use support::mount::*;
use support::*;

/// A process that takes a whole-file write lock (fcntl) and answers on
/// its stdout: "held" once it holds it, then on each line read, unlocks
/// and prints the time (seconds since the epoch).
const HOLDER: &str = r#"
import fcntl, sys, time
f = open(sys.argv[1], "r+")
fcntl.lockf(f, fcntl.LOCK_EX)
print("held", flush=True)
for line in sys.stdin:
    fcntl.lockf(f, fcntl.LOCK_UN)
    print(repr(time.time()), flush=True)
    break
time.sleep(3600)
"#;

/// A process that says "waiting", waits for the lock (F_SETLKW), and
/// prints the time it got it.
const WAITER: &str = r#"
import fcntl, sys, time
f = open(sys.argv[1], "r+")
print("waiting", flush=True)
fcntl.lockf(f, fcntl.LOCK_EX)
print(repr(time.time()), flush=True)
time.sleep(float(sys.argv[2]))
"#;

/// A process that tries the lock without waiting (F_SETLK) and prints
/// "taken" or "busy".
const TRIER: &str = r#"
import fcntl, sys
f = open(sys.argv[1], "r+")
try:
    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("taken", flush=True)
except OSError:
    print("busy", flush=True)
"#;

/// A Python child, its stdout read line by line on a thread of its own,
/// so that a process stuck in a lock wait fails the test after a limit
/// instead of hanging it.
struct Py {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Py {
    fn start(script: &str, args: &[&str]) -> Py {
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(script)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let stdin = child.stdin.take();
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines() {
                let Ok(line) = line else { return };
                if tx.send(line.trim().to_string()).is_err() {
                    return;
                }
            }
        });
        Py { child, stdin, lines }
    }

    fn line_within(&mut self, limit: Duration) -> Option<String> {
        self.lines.recv_timeout(limit).ok()
    }

    fn say(&mut self) {
        let stdin = self.stdin.as_mut().expect("stdin");
        stdin.write_all(b"go\n").expect("write");
        stdin.flush().expect("flush");
    }

    fn time(&mut self, limit: Duration, what: &str) -> f64 {
        let line = self.line_within(limit).unwrap_or_else(|| panic!("{what}: nothing within {limit:?}"));
        line.parse().unwrap_or_else(|_| panic!("{what}: {line:?}"))
    }
}

impl Drop for Py {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server whose portmapper the mounts register with, and the client
/// settings that point them there, with `state` as their `[nlm]
/// state_dir`.
fn server(extra: &str) -> TestServer {
    TestServer::start(ServerOpts {
        extra_config: &format!("[core.nlm]\nclient_portmap_port = $PORT\n{extra}"),
        ..Default::default()
    })
}

fn client_config(srv: &TestServer, state: &Path) -> String {
    format!("[nlm]\nportmap = \"127.0.0.1:{}\"\nstate_dir = \"{}\"\nrelay_check_secs = 1\n", srv.port, state.display())
}

/// Two mounts of `srv` sharing a state directory (returned, with their
/// client settings), and the file `locked` made through the first.
fn two_mounts(srv: &TestServer) -> (tempfile::TempDir, String, Mounted, Mounted) {
    let state = tempfile::tempdir().unwrap();
    let cfg = client_config(srv, state.path());
    let a = Mounted::new(srv, &cfg);
    let b = Mounted::new(srv, &cfg);
    std::fs::write(file(&a), b"x").unwrap();
    (state, cfg, a, b)
}

fn file(m: &Mounted) -> PathBuf {
    m.dir.join("locked")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// One hand-off: `from` holds the lock, a waiter on `to` blocks, `from`
/// unlocks after `hold`; the delay from the unlock to the grant.
fn hand_off(from: &Mounted, to: &Mounted, hold: Duration) -> Duration {
    let mut holder = Py::start(HOLDER, &[path(&file(from))]);
    assert_eq!(holder.line_within(Duration::from_secs(10)).as_deref(), Some("held"));
    let mut waiter = Py::start(WAITER, &[path(&file(to)), "0"]);
    assert_eq!(waiter.line_within(Duration::from_secs(10)).as_deref(), Some("waiting"));
    std::thread::sleep(hold);
    holder.say();
    let unlocked = holder.time(Duration::from_secs(10), "unlock");
    let granted = waiter.time(Duration::from_secs(30), "the blocked lock");
    Duration::from_secs_f64((granted - unlocked).max(0.0))
}

/// Two mounts of one host: the first to lock holds the portmapper's
/// entry, the other joins it. A blocked lock through either is granted
/// by callback within 50 ms of the unlock through the other; asking
/// again (1 ms doubling to 1 s) would take hundreds of milliseconds
/// after a 700 ms hold.
#[test]
fn blocked_locks_through_two_mounts_are_granted_by_callback() {
    let srv = server("");
    let (state, _cfg, mut a, mut b) = two_mounts(&srv);
    let hold = Duration::from_millis(700);
    for round in 0..3 {
        let to_a = hand_off(&b, &a, hold);
        let to_b = hand_off(&a, &b, hold);
        for (to, took) in [("a", to_a), ("b", to_b)] {
            assert!(
                took < Duration::from_millis(50),
                "round {round}: granted to {to} {took:?} after the unlock\na:\n{}\nb:\n{}",
                a.log_text(),
                b.log_text()
            );
        }
    }
    a.umount();
    b.umount();
    // Each ended cleanly: nothing left for another process to tell.
    assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0, "monitor files left");
}

/// A mount killed while a program holds a lock through it: the next
/// mount to start tells the server (SM_NOTIFY, NLM_FREE_ALL), which
/// frees the lock at once and grants it to the program waiting through
/// another mount.
#[test]
fn a_killed_mounts_locks_are_freed_when_the_next_mount_starts() {
    let srv = server("");
    let (state, cfg, mut a, mut b) = two_mounts(&srv);
    let mut holder = Py::start(HOLDER, &[path(&file(&a))]);
    assert_eq!(holder.line_within(Duration::from_secs(10)).as_deref(), Some("held"));
    let a_pid = a.child.id();
    assert!(state.path().join(a_pid.to_string()).exists(), "the mount wrote down its server");
    let mut waiter = Py::start(WAITER, &[path(&file(&b)), "0"]);
    assert_eq!(waiter.line_within(Duration::from_secs(10)).as_deref(), Some("waiting"));
    a.kill9();
    std::thread::sleep(Duration::from_millis(500));
    assert!(waiter.line_within(Duration::from_millis(100)).is_none(), "granted before anyone told the server");
    let started = Instant::now();
    let mut c = Mounted::new(&srv, &cfg);
    waiter.time(Duration::from_secs(15), "the lock the killed mount held");
    assert!(started.elapsed() < Duration::from_secs(10), "freed {:?} after the next mount started", started.elapsed());
    assert!(!state.path().join(a_pid.to_string()).exists(), "the killed mount's file was acted on");
    drop(holder);
    drop(waiter);
    b.umount();
    c.umount();
}

/// `kill -9` of the server while two mounts hold locks: the restarted
/// server tells the host (SM_NOTIFY, through the portmapper entry it
/// kept), both mounts reclaim in the grace period, and a third mount's
/// try is refused, during the grace period and after it.
#[test]
fn both_mounts_reclaim_after_the_server_is_killed() {
    let mut srv = server("[core.nfs4]\ngrace_secs = 6\n");
    let (_state, cfg, mut a, mut b) = two_mounts(&srv);
    std::fs::write(a.dir.join("fa"), b"x").unwrap();
    std::fs::write(a.dir.join("fb"), b"x").unwrap();
    let mut ha = Py::start(HOLDER, &[path(&a.dir.join("fa"))]);
    let mut hb = Py::start(HOLDER, &[path(&b.dir.join("fb"))]);
    for h in [&mut ha, &mut hb] {
        assert_eq!(h.line_within(Duration::from_secs(10)).as_deref(), Some("held"));
    }
    srv.restart();
    let restarted = Instant::now();
    let mut c = Mounted::new(&srv, &cfg);
    for name in ["fa", "fb"] {
        let mut t = Py::start(TRIER, &[path(&c.dir.join(name))]);
        // A try in the grace period waits for its end, then finds the
        // lock reclaimed.
        let got = t.line_within(Duration::from_secs(30));
        assert_eq!(
            got.as_deref(),
            Some("busy"),
            "{name}: {:?} after the restart\na:\n{}\nb:\n{}\nserver:\n{}",
            restarted.elapsed(),
            a.log_text(),
            b.log_text(),
            srv.log_text()
        );
    }
    let log = |m: &Mounted| m.log_text();
    for (m, name) in [(&a, "a"), (&b, "b")] {
        assert!(log(m).contains("reclaiming locks"), "{name} did not reclaim:\n{}", log(m));
    }
    drop(ha);
    drop(hb);
    a.umount();
    b.umount();
    c.umount();
}
