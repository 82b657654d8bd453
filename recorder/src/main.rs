//! The command line: flags and environment variables (lib.rs's Cli), one
//! listing, one exit code. Progress on stderr; --dry-run's JSON on stdout.

use clap::Parser;
use runtime_sandbox_recorder::{exit, run, Cli};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { exit::USAGE } else { exit::RECORDED };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let mut log = |line: String| eprintln!("runtime-sandbox-recorder: {line}");
    match run(&cli, &|name| std::env::var(name).ok(), &mut log) {
        Ok(outcome) => {
            match outcome.snapshot_id {
                Some(id) => log(format!("recorded snapshot {id}: {} sandboxes", outcome.sandboxes)),
                None => println!("{}", outcome.inventory()),
            }
            ExitCode::from(exit::RECORDED)
        }
        Err(failure) => {
            log(format!("nothing recorded: {}", failure.message));
            ExitCode::from(failure.code)
        }
    }
}
