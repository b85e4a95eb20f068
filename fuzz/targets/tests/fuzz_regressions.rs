//! Every input a fuzz target ever crashed on, replayed through the same
//! code path as the target (`tiledb_fuzz_targets`): files in
//! `tests/data/fuzz_regressions/<target>/`. A crash fixed once must stay
//! fixed.
//!
//! `FUZZ_REPLAY_DIR=<folder of <target>/ folders>` replays another corpus
//! the same way (for example `fuzz/corpus` after `fuzz/seed.sh`).

use std::path::{Path, PathBuf};

use tiledb_fuzz_targets::{run, CappedAllocator, TARGETS};

/// Every single allocation is held to the fuzzers' cap, so an input once
/// reported as out-of-memory fails this test until its declared size is
/// refused.
#[global_allocator]
static ALLOCATOR: CappedAllocator = CappedAllocator;

fn replay(root: &Path) -> usize {
    let mut replayed = 0;
    let Ok(dirs) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut dirs: Vec<PathBuf> = dirs.flatten().map(|e| e.path()).collect();
    dirs.sort();
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        let target = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        assert!(
            TARGETS.iter().any(|(name, _)| *name == target),
            "{} is not named after a fuzz target",
            dir.display()
        );
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("list a regression folder")
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        for file in files {
            let data = std::fs::read(&file).expect("read a regression input");
            println!("replaying {}", file.display());
            assert!(run(&target, &data));
            replayed += 1;
        }
    }
    replayed
}

#[test]
fn every_saved_crash_stays_fixed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz_regressions");
    let replayed = replay(&root);
    println!("{replayed} regression input(s) replayed");
    assert!(
        replayed > 0,
        "no regression inputs under {}",
        root.display()
    );
}

#[test]
fn replay_a_corpus_when_asked() {
    let Some(dir) = std::env::var_os("FUZZ_REPLAY_DIR") else {
        println!("FUZZ_REPLAY_DIR is not set; nothing extra to replay");
        return;
    };
    let replayed = replay(Path::new(&dir));
    println!(
        "{replayed} input(s) replayed from {}",
        Path::new(&dir).display()
    );
}

#[test]
fn every_target_runs_on_empty_and_tiny_inputs() {
    for (name, target) in TARGETS {
        for input in [&[][..], &[0u8][..], &[0xFF; 64][..], &[1u8; 300][..]] {
            target(input);
        }
        assert!(run(name, &[]));
    }
    assert!(!run("no_such_target", &[]));
}
