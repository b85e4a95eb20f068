//! `cargo run -p tiledb-codegen [-- --check]`: regenerate (or check) the
//! binrw structures in runtime/src/format/generated/ and the tables in spec/tables/.

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str =
    "usage: tiledb-codegen [--check] [--spec DIR] [--root DIR] [--emit json|ksy DIR]";

fn main() -> ExitCode {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default();
    let mut root = workspace;
    let mut spec_dir = None;
    let mut check = false;
    let mut emit = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => check = true,
            "--spec" => spec_dir = args.next().map(PathBuf::from),
            "--root" => root = args.next().map(PathBuf::from).unwrap_or(root),
            "--emit" => {
                let kind = args.next().unwrap_or_default();
                let Some(kind) = tiledb_codegen::EmitKind::parse(&kind) else {
                    eprintln!("--emit takes json or ksy, not {kind:?}\n{USAGE}");
                    return ExitCode::from(2);
                };
                let Some(dir) = args.next() else {
                    eprintln!("--emit {kind:?} needs a directory\n{USAGE}");
                    return ExitCode::from(2);
                };
                emit = Some((kind, PathBuf::from(dir)));
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("unknown argument {other}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let spec_dir = spec_dir.unwrap_or_else(|| root.join("spec"));
    if let Some((kind, dir)) = emit {
        return emit_outside(&spec_dir, kind, &dir);
    }
    let generated = match tiledb_codegen::generate(&spec_dir) {
        Ok(generated) => generated,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    if check {
        let drifts = tiledb_codegen::check(&root, &generated);
        if drifts.is_empty() {
            println!(
                "spec/ and its generated files agree ({} files)",
                generated.files.len()
            );
            return ExitCode::SUCCESS;
        }
        for drift in &drifts {
            eprint!("{}", drift.diff);
        }
        eprintln!(
            "error: {} generated file(s) differ from spec/; run `cargo run -p tiledb-codegen` and commit the result",
            drifts.len()
        );
        return ExitCode::FAILURE;
    }
    match tiledb_codegen::write(&root, &generated) {
        Ok(changed) => {
            for path in &changed {
                println!("wrote {}", path.display());
            }
            println!(
                "{} of {} generated files changed",
                changed.len(),
                generated.files.len()
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: cannot write the generated files: {err}");
            ExitCode::FAILURE
        }
    }
}

/// `--emit json|ksy DIR`: the spec for other languages.
fn emit_outside(
    spec_dir: &std::path::Path,
    kind: tiledb_codegen::EmitKind,
    dir: &std::path::Path,
) -> ExitCode {
    let files = match tiledb_codegen::export(spec_dir, kind) {
        Ok(files) => files,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    match tiledb_codegen::export::write_all(dir, &files) {
        Ok(written) => {
            for path in &written {
                println!("wrote {}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: cannot write to {}: {err}", dir.display());
            ExitCode::FAILURE
        }
    }
}
