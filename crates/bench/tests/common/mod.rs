//! Shared by the bench's integration tests: parse a command line the way the
//! nfsx binary does (BenchArgs under a `bench` subcommand) and run it.

#![allow(dead_code)]

use bench::cli::BenchArgs;
use bench::model::BenchReport;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "nfsx")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    Bench(BenchArgs),
}

/// Parses `nfsx bench ARGS...`.
pub fn parse(args: &[&str]) -> Result<BenchArgs, clap::Error> {
    let argv = ["nfsx", "bench"].iter().chain(args).copied();
    Cli::try_parse_from(argv).map(|c| match c.command {
        Command::Bench(b) => b,
    })
}

/// Parses and runs, quietly, expecting success without failed runs.
pub fn bench(args: &[&str]) -> BenchReport {
    let mut all = args.to_vec();
    all.push("--quiet");
    let parsed = parse(&all).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    let report = bench::cli::run(parsed).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    for r in &report.runs {
        assert!(r.ok, "{args:?}: run failed: {:?}", r.error);
    }
    assert!(!report.partial);
    report
}

/// Asserts every successful run has every headline metric as a number.
pub fn assert_headlines(report: &BenchReport) {
    assert!(!report.metrics.is_empty());
    for r in report.runs.iter().filter(|r| r.ok) {
        for m in &report.metrics {
            let v = r.metric(m).unwrap_or_else(|| panic!("run {:?} lacks {m}", r.point));
            assert!(v.is_finite() && v >= 0.0, "{m} = {v}");
        }
    }
}

/// Entries left in a directory (working directories should be gone).
pub fn entries(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}
