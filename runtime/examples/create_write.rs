//! The README's write example: creates a sparse array with a ZSTD-filtered
//! attribute in the folder given (a fresh temporary folder by default) and
//! writes two cells, then reads them back (the temporary folder is removed
//! at the end).
//!
//! `cargo run -p tiledb-runtime --example create_write -- [FOLDER]`
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::filter::{Datatype, Filter};
use tiledb_runtime::schema::{AttributeSpec, DimensionSpec, SchemaBuilder};
use tiledb_runtime::write::{Column, Write};

/// Creates, writes and reads back the array.
pub fn main() -> tiledb_runtime::Result<()> {
    let given = std::env::args().nth(1);
    let folder = given.clone().map_or_else(
        || std::env::temp_dir().join(format!("create_write-{}", std::process::id())),
        Into::into,
    );
    let path = folder.join("my_array");

    let schema = SchemaBuilder::sparse()
        .dimension(DimensionSpec::new::<i32>("d", 0, 99, Some(10)))
        .attribute(
            AttributeSpec::new("a", Datatype::Float64)
                .with_filters(vec![Filter::Zstd { level: 3 }]),
        );
    let array = Array::create_path(&path, &schema)?;
    array.write(&Write::sparse(vec![
        Column::from_values("d", &[3i32, 1]),
        Column::from_values("a", &[0.5f64, 1.5]),
    ]))?;

    let array = Array::open_path(&path, OpenOptions::default())?;
    let result = array.query().read()?;
    let (d, a) = (result.values::<i32>("d")?, result.values::<f64>("a")?);
    for (d, a) in d.iter().zip(a.iter()) {
        println!("{d}: {a}");
    }
    if given.is_none() {
        std::fs::remove_dir_all(&folder).expect("remove the temporary folder");
    }
    Ok(())
}
