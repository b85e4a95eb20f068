//! `cargo run -p tiledb-codegen [-- --check | --unused]`: regenerate (or
//! check) the binrw structures in runtime/src/format/generated/ and the
//! tables in spec/tables/; or list the generated types no runtime code uses.

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str =
    "usage: tiledb-codegen [--check | --unused] [--spec DIR] [--root DIR] [--emit json|ksy DIR]";

fn main() -> ExitCode {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default();
    let mut root = workspace;
    let mut spec_dir = None;
    let mut check = false;
    let mut unused = false;
    let mut emit = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => check = true,
            "--unused" => unused = true,
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
    if unused {
        return report_unused(&root, &spec_dir);
    }
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

/// `--unused`: every generated type no runtime code names, with its reason;
/// fails when one has no `unused_reason` or a used one keeps it.
fn report_unused(root: &std::path::Path, spec_dir: &std::path::Path) -> ExitCode {
    let spec = match tiledb_codegen::load_spec(spec_dir) {
        Ok(spec) => spec,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    let uses = match tiledb_codegen::unused::scan(&spec, &root.join("runtime/src")) {
        Ok(uses) => uses,
        Err(err) => {
            eprintln!("error: cannot read runtime/src: {err}");
            return ExitCode::FAILURE;
        }
    };
    let unused: Vec<_> = uses.iter().filter(|u| !u.used).collect();
    println!(
        "{} of {} generated types are used by no runtime code outside format/generated/:",
        unused.len(),
        uses.len()
    );
    for u in &unused {
        println!(
            "  {} ({} {}): {}",
            u.name,
            u.file,
            u.kind,
            u.reason.as_deref().unwrap_or("NO REASON")
        );
    }
    let problems: Vec<String> = uses
        .iter()
        .filter_map(tiledb_codegen::unused::TypeUse::problem)
        .collect();
    for problem in &problems {
        eprintln!("error: {problem}");
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "error: {} generated type(s) need an unused_reason in spec/ (or to lose one)",
            problems.len()
        );
        ExitCode::FAILURE
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
