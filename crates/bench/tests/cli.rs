//! The command line's refusals: nonsense parameters and unusable targets
//! give one clear line naming the option or target, before anything runs;
//! a target failing mid-bench leaves a partial report.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bench::target::{BenchError, BenchFs, Target};
use common::parse;

fn tmp() -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().to_str().unwrap().to_string();
    (d, s)
}

/// The error of parsing or running `args`, as the user would see it.
fn error_of(args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.push("--quiet");
    match parse(&all) {
        Err(e) => e.to_string(),
        Ok(a) => bench::cli::run(a).map(|_| panic!("{args:?} should fail")).unwrap_err().to_string(),
    }
}

#[test]
fn nonsense_parameters_name_their_option() {
    let (_d, t) = tmp();
    let cases: &[(&[&str], &str)] = &[
        (&["seqwrite", "--target", &t, "--size", "0"], "--size"),
        (&["seqwrite", "--target", &t, "--size", "4parsecs"], "unknown size unit"),
        (
            &["seqwrite", "--target", &t, "--io-size", "2MiB", "--size", "1MiB"],
            "--io-size 2MiB is larger than --size 1MiB",
        ),
        (&["data", "--target", &t, "--threads", "0"], "--threads"),
        (&["data", "--target", &t, "--threads", "5000"], "4096"),
        (&["data", "--target", &t, "--size", "64KiB", "--io-size", "64KiB", "--threads", "2"], "--threads 2"),
        (&["seqwrite", "--target", &t, "--runs", "0"], "--runs"),
        (&["seqwrite", "--target", &t, "--delay", "10"], "needs a unit"),
        (&["seqwrite", "--target", &t, "--op", "list"], "--op does not apply to seqwrite"),
        (&["metadata", "--target", &t, "--op", "frobnicate"], "--op"),
        (&["macro", "--target", &t, "--duration", "0"], "--duration"),
        (&["seqwrite", "--target", &t, "--target", &t], "given twice"),
        (&["warp-drive", "--target", &t], "warp-drive"),
    ];
    for (args, want) in cases {
        let e = error_of(args);
        assert!(e.contains(want), "{args:?}: {e:?} does not mention {want:?}");
    }
}

#[test]
fn delay_needs_a_network_target() {
    let (_d, t) = tmp();
    let e = error_of(&["seqwrite", "--target", &t, "--delay", "0,10ms"]);
    assert!(e.contains("--delay") && e.contains("nfs://"), "{e}");
}

#[test]
fn unusable_directories_are_refused() {
    let e = error_of(&["seqwrite", "--target", "/nonexistent/nfsx-bench"]);
    assert!(e.contains("/nonexistent/nfsx-bench") && e.contains("No such file"), "{e}");

    let (d, _) = tmp();
    let file = d.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let e = error_of(&["seqwrite", "--target", file.to_str().unwrap()]);
    assert!(e.contains("not a directory"), "{e}");

    use std::os::unix::fs::PermissionsExt;
    let ro = d.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    // Root ignores permission bits; sysfs refuses new files even to root.
    let ro = if std::fs::write(ro.join("probe"), b"").is_ok() { "/sys".into() } else { ro };
    let e = error_of(&["seqwrite", "--target", ro.to_str().unwrap()]);
    assert!(e.contains("not writable"), "{e}");
}

#[test]
fn unreachable_nfs_target_fails_quickly() {
    let start = Instant::now();
    let e = error_of(&["seqwrite", "--target", "nfs://127.0.0.1:1/nowhere"]);
    assert!(e.contains("nfs://127.0.0.1:1/nowhere"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(25), "took {:?}", start.elapsed());
}

#[test]
fn help_explains_options_and_defaults() {
    let e = parse(&["--help"]).err().unwrap();
    let help = e.to_string();
    for want in ["--io-size", "--delay", "--personality", "MB = 10^6", "32MiB", "fileserver", "Exit status"] {
        assert!(help.contains(want), "help lacks {want:?}:\n{help}");
    }
}

/// A target that connects once and then is gone, like a server that died.
struct Flaky {
    inner: Arc<dyn Target>,
    left: std::sync::Mutex<usize>,
}

impl Target for Flaky {
    fn name(&self) -> &str {
        "flaky"
    }
    fn connect(&self) -> bench::target::Result<Arc<dyn BenchFs>> {
        let mut left = self.left.lock().unwrap();
        if *left == 0 {
            return Err(BenchError::Target("flaky: connection refused".into()));
        }
        *left -= 1;
        self.inner.connect()
    }
}

#[test]
fn a_failing_target_makes_the_report_partial_and_the_rest_goes_on() {
    let (_a, ta) = tmp();
    let (_b, tb) = tmp();
    let args = parse(&["seqwrite", "--target", &ta, "--size", "64KiB", "--runs", "3", "--quiet"]).unwrap();
    let (points, metrics, params) = bench::cli::build_points(&args).unwrap();
    let good: Arc<dyn Target> = Arc::new(bench::dir::DirTarget::open(&ta).unwrap());
    let flaky = Arc::new(Flaky { inner: Arc::new(bench::dir::DirTarget::open(&tb).unwrap()), left: 1.into() });
    let plan = bench::run::Plan {
        workload: "seqwrite".into(),
        targets: vec![good, flaky],
        points,
        runs: 3,
        metrics: metrics.iter().map(|m| m.to_string()).collect(),
        params,
        one_way: false,
        keep: false,
        quiet: true,
    };
    let report = bench::run::execute(&plan);
    assert!(report.partial);
    let ok: Vec<(&str, bool)> = report.runs.iter().map(|r| (r.target.as_str(), r.ok)).collect();
    assert_eq!(
        ok,
        [(ta.as_str(), true), ("flaky", true), (&ta, true), ("flaky", false), (&ta, true), ("flaky", false)]
    );
    assert!(report.runs[3].error.as_ref().unwrap().contains("connection refused"));
    assert!(report.runs[5].error.as_ref().unwrap().contains("not run"), "{:?}", report.runs[5].error);
    let v = serde_json::to_value(&report).unwrap();
    assert_eq!(v["runs"][3]["ok"], false);
}
