//! Opening an array with thousands of fragments whose footers are
//! consolidated into one `__fragment_meta/*.meta` file reads that one file,
//! not every fragment's `__fragment_metadata.tdb` (checked with the storage
//! read counter). The array is built here from a corpus array written by
//! TileDB 2.30: its one fragment is copied under 2000 fresh names (each
//! committed by its `.wrt`), and the `.meta` file is assembled from the
//! fragment's footer with the generated structures.

mod common;

use std::path::Path;

use tiledb_runtime::array::{Array, OpenOptions};

use tiledb_runtime::format::generated::{ConsolidatedFragmentEntry, ConsolidatedFragmentMetadata};
use tiledb_runtime::format::io::write_to_vec;
use tiledb_runtime::read::{ReadQuery, ResultOrder};
use tiledb_runtime::storage::LocalStorage;
use tiledb_runtime::tile::generic::write_generic_tile;

const FRAGMENTS: u64 = 2000;

#[test]
fn consolidated_footers_spare_thousands_of_reads() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/corpus/tiledb-2.30/sparse.basic.int32/array");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("array");
    common::copy_dir(&source.join("__schema"), &root.join("__schema"));
    std::fs::create_dir_all(root.join("__commits")).unwrap();
    std::fs::create_dir_all(root.join("__fragment_meta")).unwrap();
    let original = std::fs::read_dir(source.join("__fragments"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    // The footer: the last 8 bytes give its length (format 22).
    let meta = std::fs::read(original.join("__fragment_metadata.tdb")).unwrap();
    let footer_len = u64::from_le_bytes(meta[meta.len() - 8..].try_into().unwrap()) as usize;
    let footer = &meta[meta.len() - 8 - footer_len..meta.len() - 8];

    let mut names = Vec::new();
    for i in 1..=FRAGMENTS {
        let name = format!("__{i}_{i}_{i:032x}_22");
        common::copy_dir(&original, &root.join("__fragments").join(&name));
        std::fs::write(root.join("__commits").join(format!("{name}.wrt")), b"").unwrap();
        names.push(name);
    }
    // Entry offsets count from the start of the payload: n u32, then
    // {name_len u64, name, offset u64} per fragment, then the footers.
    let table: usize = 4 + names.iter().map(|n| 16 + n.len()).sum::<usize>();
    let entries = names
        .iter()
        .enumerate()
        .map(|(i, n)| ConsolidatedFragmentEntry {
            name: n.as_bytes().to_vec(),
            offset: (table + i * footer.len()) as u64,
        })
        .collect();
    let consolidated = ConsolidatedFragmentMetadata {
        entries,
        footers: footer.repeat(names.len()),
    };
    let payload = write_to_vec(&consolidated, (), "ConsolidatedFragmentMetadata").unwrap();
    let tile = write_generic_tile(&payload, 22, None).unwrap();
    std::fs::write(
        root.join("__fragment_meta")
            .join(format!("__1_{FRAGMENTS}_{:032x}_22.meta", 7)),
        tile,
    )
    .unwrap();

    let array = Array::open(Box::new(LocalStorage::new(&root)), OpenOptions::default()).unwrap();
    assert_eq!(array.fragments().len() as u64, FRAGMENTS);
    let opened = array.storage().counters().files_opened;
    println!("files opened to open {FRAGMENTS} fragments: {opened}");
    // The schema and the .meta file; never a fragment's own metadata file.
    assert!(opened <= 3, "opening read {opened} files");

    // Every fragment holds the same cells; without duplicates the newest wins
    // and the result equals the original one-fragment array's.
    let query = ReadQuery {
        layout: ResultOrder::Global,
        ..ReadQuery::default()
    };
    let result = array.read(&query).unwrap();
    let original = Array::open_path(&source, OpenOptions::default())
        .unwrap()
        .read(&query)
        .unwrap();
    assert_eq!(result.cell_count(), original.cell_count());
    assert_eq!(result.dimensions[0].data, original.dimensions[0].data);
    assert_eq!(result.attributes[0].data, original.attributes[0].data);
}
