//! What a generic tile's header costs against the whole tile's read: the
//! binrw read of `GenericTileHeader` alone, then `read_generic_tile` (header,
//! pipeline conversion, unfiltering), each repeated, on the generic tile at
//! the start of the file given (an array schema, say).
//!
//! `cargo run --release -p tiledb-runtime --example header_cost -- FILE`

use std::time::Instant;
use tiledb_runtime::format::generated::GenericTileHeader;
use tiledb_runtime::format::io::read_prefix;
use tiledb_runtime::tile::generic::read_generic_tile;
/// Times both reads and prints the share of the header.
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let n = 20000;
    let t = Instant::now();
    for _ in 0..n {
        let (h, _): (GenericTileHeader, u64) = read_prefix(&bytes, (), "h").unwrap();
        std::hint::black_box(h);
    }
    let header = t.elapsed().as_nanos() as f64 / n as f64;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(read_generic_tile(&bytes, 0, None).unwrap());
    }
    let whole = t.elapsed().as_nanos() as f64 / n as f64;
    println!(
        "{path}: {} bytes; header {header:.0} ns, whole tile {whole:.0} ns ({:.1}%)",
        bytes.len(),
        100.0 * header / whole
    );
}
