#!/usr/bin/env bash
# Rebuilds fuzz/corpus/<target>/ from the committed conformance corpus (and
# tiles the seeder filters itself). fuzz/corpus is not committed; this makes
# the same seeds every time. Inputs the fuzzer added are kept.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --release --manifest-path fuzz/Cargo.toml --bin seed
