//! A typed read of a corpus array: the cells with `d0` in 1..=50, and their `s` strings.
use tiledb_runtime::array::{Array, OpenOptions};

/// Reads the cells and prints them, a null string as `null`.
pub fn main() -> tiledb_runtime::Result<()> {
    let case = "conformance/corpus/tiledb-2.30/sparse.attr.var_utf8.nullable.zstd";
    let path = format!("{}/../{case}/array", env!("CARGO_MANIFEST_DIR"));
    let array = Array::open_path(path, OpenOptions::default())?;
    let result = array
        .query()
        .range("d0", 1..=50)?
        .attributes(["s"])
        .read()?;
    for (d0, s) in result.values::<i64>("d0")?.iter().zip(result.strings("s")?) {
        println!("{d0}: {}", s.unwrap_or("null"));
    }
    Ok(())
}
