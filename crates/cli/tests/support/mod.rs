//! Shared helpers for the integration tests: start `nfsx serve` as a child
//! process on a free port, and run the real libnfs clients against it.
#![allow(dead_code)]

pub mod bench;
pub mod mount;
pub mod rpc;

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Port 111 is one per machine: tests that use portmap discovery take it
/// in turn.
pub fn portmap_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A port nothing listens on, and that no other test of this process was
/// given: the port is free only until the server binds it, so two tests
/// starting servers at once could otherwise get the same one, and the
/// loser's checks would find the winner listening there.
pub fn free_port() -> u16 {
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// How long a started server may take to listen.
const READY_WITHIN: Duration = Duration::from_secs(20);

pub struct TestServer {
    pub child: Child,
    pub port: u16,
    pub export: PathBuf,
    pub state: PathBuf,
    pub log: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    _tmp: tempfile::TempDir,
}

pub struct ServerOpts<'a> {
    /// Bind the portmapper on 111 as well (plain nfs:// URLs).
    pub portmap_111: bool,
    pub exports: Option<&'a str>,
    pub backend: &'a str,
    pub extra_config: &'a str,
    /// The directory to export when it is not a fresh host directory (a
    /// path inside a Ceph file system with `backend: "ceph"`).
    pub export_path: Option<&'a str>,
    /// The handle-signing key, shared by servers that must accept each
    /// other's file handles (heads of one store).
    pub handle_key: Option<[u8; 32]>,
    /// Environment variables for the server process (a Kerberos realm's
    /// KRB5_CONFIG, nss_wrapper's files).
    pub env: Vec<(String, String)>,
}

impl Default for ServerOpts<'_> {
    fn default() -> Self {
        ServerOpts {
            portmap_111: false,
            exports: None,
            backend: "local",
            extra_config: "",
            export_path: None,
            handle_key: None,
            env: Vec::new(),
        }
    }
}

impl TestServer {
    pub fn start(opts: ServerOpts) -> TestServer {
        let tmp = tempfile::tempdir().unwrap();
        let export = opts.export_path.map_or_else(|| tmp.path().join("export"), PathBuf::from);
        let state = tmp.path().join("state");
        if opts.export_path.is_none() {
            std::fs::create_dir_all(&export).unwrap();
        }
        if let Some(key) = opts.handle_key {
            std::fs::create_dir_all(&state).unwrap();
            std::fs::write(state.join("handle.key"), key).unwrap();
        }
        let port = free_port();
        let config = tmp.path().join("nfsx.toml");
        let portmap = if opts.portmap_111 { 111 } else { 0 };
        // "$PORT" in the extra settings is the port the server listens on.
        let extra = opts.extra_config.replace("$PORT", &port.to_string());
        std::fs::write(&config, format!("portmap_port = {portmap}\n{extra}\n")).unwrap();
        let mut args = vec![
            "serve".to_string(),
            "--listen".into(),
            format!("127.0.0.1:{port}"),
            "--backend".into(),
            opts.backend.into(),
            "--config".into(),
            config.display().to_string(),
            "--state-dir".into(),
            state.display().to_string(),
        ];
        if let Some(text) = opts.exports {
            let f = tmp.path().join("exports");
            std::fs::write(&f, text.replace("$EXPORT", &export.display().to_string())).unwrap();
            args.push("--exports".into());
            args.push(f.display().to_string());
        } else {
            args.push(export.display().to_string());
        }
        let log = tmp.path().join("server.log");
        let env = opts.env;
        let mut s = TestServer { child: spawn(&args, &env, &log), port, export, state, log, args, env, _tmp: tmp };
        s.wait_ready(READY_WITHIN);
        s
    }

    fn wait_ready(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let addr: SocketAddr = format!("127.0.0.1:{}", self.port).parse().unwrap();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("nfsx exited early ({st}):\n{}", self.log_text());
            }
            assert!(Instant::now() < deadline, "nfsx did not listen in time:\n{}", self.log_text());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `nfs://127.0.0.1/EXPORT/rel?version=3` with explicit ports (no
    /// portmapper needed).
    pub fn url(&self, rel: &str) -> String {
        format!("nfs://127.0.0.1{}{}?version=3&nfsport={p}&mountport={p}", self.export.display(), rel, p = self.port)
    }

    /// The plain URL a user types: found through the portmapper on 111.
    pub fn plain_url(&self, rel: &str) -> String {
        format!("nfs://127.0.0.1{}{}?version=3", self.export.display(), rel)
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn restart(&mut self) {
        self.restart_within(READY_WITHIN);
    }

    /// [`TestServer::restart`], for a server whose start waits on more
    /// than itself (a Ceph head whose MDS is recovering).
    pub fn restart_within(&mut self, limit: Duration) {
        self.kill9();
        let log = self.log.clone();
        self.child = spawn(&self.args, &self.env, &log);
        self.wait_ready(limit);
    }

    pub fn sigterm(&mut self) -> std::process::ExitStatus {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        self.child.wait().unwrap()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if self.args.iter().any(|a| a == "ceph") {
            // A head killed outright leaves its Ceph session, whose
            // capabilities stall every other client of those directories
            // until the MDS times it out: stop it as an operator would.
            // SAFETY: plain kill(2) on our own child's pid.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(args: &[String], env: &[(String, String)], log: &Path) -> Child {
    let out = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    Command::new(env!("CARGO_BIN_EXE_nfsx"))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("NFSX_LOG", "info")
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .expect("start nfsx")
}

/// Runs a command with a time limit; the output is returned whatever the
/// exit status. Output is read while the command runs, so a long listing
/// cannot fill the pipe and stall it.
pub fn run(cmd: &str, args: &[&str], limit: Duration) -> Output {
    use std::io::Read;
    let mut child = Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e} (is libnfs-utils installed?)"));
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = so.read_to_end(&mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = se.read_to_end(&mut v);
        v
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let (o, e) = (out_t.join().unwrap(), err_t.join().unwrap());
            panic!(
                "{cmd} {args:?} timed out after {limit:?}\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&o),
                String::from_utf8_lossy(&e)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output { status, stdout: out_t.join().unwrap(), stderr: err_t.join().unwrap() }
}

pub fn ok(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The libnfs driver in tests/support/nfsops.c, compiled once per test run.
pub fn nfsops() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/nfsops.c");
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nfsops");
        let st = Command::new("cc")
            .args(["-O2", "-Wall", "-o"])
            .arg(&out)
            .arg(&src)
            .arg("-lnfs")
            .status()
            .expect("cc (needs libnfs-dev)");
        assert!(st.success(), "compiling nfsops.c failed (is libnfs-dev installed?)");
        out
    })
}

pub fn sha256_file(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    let mut f = std::fs::File::open(path).unwrap();
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).unwrap();
    format!("{:x}", h.finalize())
}

/// A file of `len` pseudo-random bytes (fast: xorshift, not crypto).
pub fn random_file(path: &Path, len: u64, seed: u64) {
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut x = seed | 1;
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        for chunk in buf.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let b = x.to_le_bytes();
            chunk.copy_from_slice(&b[..chunk.len()]);
        }
        let n = left.min(buf.len() as u64) as usize;
        f.write_all(&buf[..n]).unwrap();
        left -= n as u64;
    }
    f.flush().unwrap();
}
pub mod v4;

/// Every NFSv3 namespace and attribute operation once, through libnfs
/// (`nfsops` at `url`), with the answers checked; `word` is written to a
/// file and read back. Leaves the export as it found it.
pub fn namespace_round(url: &str, word: &str) {
    let write = format!("write /d/f {word}");
    let out = run(
        nfsops().to_str().unwrap(),
        &[
            url,
            "mkdir /d",
            "creat /d/f 644",
            &write,
            "cat /d/f",
            "rename /d/f /d/g",
            "!stat /d/f",
            "link /d/g /d/h",
            "symlink ../target /d/s",
            "readlink /d/s",
            "chmod /d/g 600",
            "truncate /d/g 5",
            "utimes /d/g 1000000",
            "stat /d/g",
            "mkfifo /d/p",
            "ls /d",
            "!rmdir /d",
            "unlink /d/h",
            "unlink /d/s",
            "unlink /d/p",
            "unlink /d/g",
            "!unlink /d/g",
            "rmdir /d",
            "!rmdir /d",
        ],
        Duration::from_secs(60),
    );
    let text = ok(&out, "nfsops");
    assert!(text.contains(&format!("cat /d/f -> {word}")), "{text}");
    assert!(text.contains("readlink /d/s -> ../target"), "{text}");
    assert!(text.contains("mode=100600 size=5 nlink=2"), "{text}");
    assert!(text.contains("mtime=1000000"), "{text}");
    assert!(text.contains("ls /d -> entries=4"), "{text}");
}

/// The Prometheus exposition a server's metrics listener serves.
pub fn get_metrics(port: u16) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body
}
