//! `xdrgen INPUT.x [-o OUTPUT.rs]`: writes the generated Rust module to
//! OUTPUT or standard output.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut input = None;
    let mut output = None;
    let mut args = std::env::args_os().skip(1);
    while let Some(a) = args.next() {
        if a == "-o" {
            output = args.next().map(PathBuf::from);
            if output.is_none() {
                return usage("-o needs a file name");
            }
        } else if a == "-h" || a == "--help" {
            return usage("");
        } else if input.is_none() {
            input = Some(PathBuf::from(a));
        } else {
            return usage("only one input file");
        }
    }
    let Some(input) = input else { return usage("no input file") };
    let src = match std::fs::read_to_string(&input) {
        Ok(s) => s,
        Err(e) => return fail(&format!("{}: {e}", input.display())),
    };
    let code = match xdrgen::generate(&src, &xdrgen::source_name(&input)) {
        Ok(c) => c,
        Err(e) => return fail(&format!("{}: {e}", input.display())),
    };
    let res = match &output {
        Some(p) => std::fs::write(p, code.as_bytes()),
        None => std::io::stdout().lock().write_all(code.as_bytes()),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&format!("writing output: {e}")),
    }
}

fn usage(msg: &str) -> ExitCode {
    if !msg.is_empty() {
        eprintln!("xdrgen: {msg}");
    }
    eprintln!("usage: xdrgen INPUT.x [-o OUTPUT.rs]");
    if msg.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("xdrgen: {msg}");
    ExitCode::FAILURE
}
