//! `tdb differential`: a differential fuzzing campaign against TileDB (see
//! `tiledb_conformance::differential`), or the replay of one saved finding.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use tiledb_conformance::adapter::tiledb_py_command;
use tiledb_conformance::differential::{replay_finding, run_campaign, CampaignConfig};
use tiledb_conformance::{Adapter, ProcessAdapter, RuntimeAdapter};

use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    /// Stop after this many seconds (default 60, unless --executions is given).
    #[arg(long, value_name = "SECONDS")]
    seconds: Option<u64>,
    /// Stop after this many executions.
    #[arg(long, value_name = "N")]
    executions: Option<u64>,
    /// The seed of the mutations (default: from the clock); a campaign replays from its seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Where findings are saved, one folder each (default: target/differential).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Read a saved finding again with both readers instead of running a campaign.
    #[arg(long, value_name = "DIR")]
    replay: Option<PathBuf>,
    /// Only the cases whose id contains this (e.g. `group`, `delete`, `encrypted`, `label`).
    #[arg(long, value_name = "PART")]
    cases: Option<String>,
    /// Seconds either side may take over one request before it counts as a hang.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    timeout: u64,
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    let root = crate::conformance::workspace_root();
    let conformance_dir = tiledb_conformance::kit_dir().to_path_buf();
    let timeout = Duration::from_secs(args.timeout.max(1));
    let command = tiledb_py_command(&root, &conformance_dir).ok_or(
        "TileDB is needed: no .venv-tiledb/bin/python in the workspace and no $TILEDB_PY \
         (scripts/test installs it)",
    )?;
    let mut theirs = ProcessAdapter::start(command, timeout)
        .map_err(|e| format!("the tiledb-py adapter did not start: {e}"))?;
    let mut ours = RuntimeAdapter::with_timeout(timeout);

    if let Some(dir) = &args.replay {
        let reads = replay_finding(dir, &mut ours, &mut theirs)?;
        let mut disagreements = 0;
        for (read, verdict) in reads {
            match verdict {
                None => println!("read {read}: both readers agree"),
                Some(tiledb_conformance::differential::Disagreement { kind, detail }) => {
                    disagreements += 1;
                    println!("read {read}: {kind}\n{detail}");
                }
            }
        }
        return Ok(if disagreements == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }

    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    let config = CampaignConfig {
        cases_dir: conformance_dir.join("cases"),
        out_dir: args.out.unwrap_or_else(|| root.join("target/differential")),
        seed,
        executions: args.executions,
        duration: match (args.seconds, args.executions) {
            (Some(s), _) => Some(Duration::from_secs(s)),
            (None, Some(_)) => None,
            (None, None) => Some(Duration::from_secs(60)),
        },
        repro_prefix: "cargo run --release --bin tdb -- differential".into(),
        only: args.cases,
    };
    eprintln!(
        "differential: seed {seed}, {} against {}, findings in {}",
        ours.info().name,
        theirs.info().name,
        config.out_dir.join("findings").display()
    );
    let summary = run_campaign(&config, &mut ours, &mut theirs, &mut |n, finding| {
        if let Some(f) = finding {
            eprintln!(
                "differential: execution {n}: {}: {}\n  repro: {}",
                f.kind, f.summary, f.repro
            );
        } else if n % 100 == 0 {
            eprintln!("differential: {n} executions");
        }
    })?;
    println!(
        "{} executions (seed {seed}): {} reads agreed, {} reads refused by both, {} mutated recipes refused by their writer, {} findings",
        summary.executions,
        summary.reads_agreed,
        summary.reads_both_refused,
        summary.writes_refused,
        summary.findings.len()
    );
    for f in &summary.findings {
        println!("  {}: {}\n    repro: {}", f.kind, f.summary, f.repro);
    }
    Ok(if summary.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
