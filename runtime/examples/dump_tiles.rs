//! Prints every tile of one fixed attribute of each fragment, unfiltered, as
//! little-endian i64 words (a debugging aid for the writer).
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::filter::FilterContext;
use tiledb_runtime::fragment::Field;
use tiledb_runtime::storage::RelPath;
use tiledb_runtime::tile::unfilter_tile;

fn main() -> tiledb_runtime::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().unwrap_or_default();
    let array = Array::open_path(&dir, OpenOptions::default())?;
    let attr = &array.schema().attributes[0];
    let cell = attr.cell_size().unwrap_or(8);
    for frag in array.fragments() {
        let tiles = frag.field_tiles(array.storage(), Field::Attribute(0))?;
        let file: RelPath = frag.data_path(Field::Attribute(0), "")?;
        let bytes = array.storage().read(&file)?;
        let mut ends = tiles.offsets[1..].to_vec();
        ends.push(bytes.len() as u64);
        for (start, end) in tiles.offsets.iter().zip(ends) {
            let ctx = FilterContext::new(attr.datatype, cell, 22);
            let tile = &bytes[*start as usize..end as usize];
            let n = frag.cell_num(0, 1 << 20);
            let data = unfilter_tile(tile, &attr.filters, &ctx, 64)
                .or_else(|_| unfilter_tile(tile, &attr.filters, &ctx, n * cell))?;
            let words: Vec<i64> = data
                .chunks(8)
                .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect();
            println!("{words:?}");
        }
    }
    Ok(())
}
