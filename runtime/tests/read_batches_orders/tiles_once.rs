//! Hilbert runs over a string dimension decode each tile once (data bytes
//! counted by a wrapping `Storage`).

use std::path::Path;
use std::sync::atomic::Ordering;

use tiledb_runtime::read::{batches, ReadQuery, ReadResult, ResultOrder};

use super::counted;

/// The bytes of a fragment's data files (its metadata file aside), summed
/// over the array's fragments.
fn data_file_bytes(array: &Path) -> u64 {
    let mut total = 0;
    for fragment in std::fs::read_dir(array.join("__fragments")).unwrap() {
        for file in std::fs::read_dir(fragment.unwrap().path()).unwrap() {
            let file = file.unwrap();
            if file.file_name() != "__fragment_metadata.tdb" {
                total += file.metadata().unwrap().len();
            }
        }
    }
    total
}

/// A Hilbert-ordered read over a string dimension decodes each tile once:
/// two fragments, one of 200 tiles and one of 3 whose strings are drawn
/// from the whole range (each of its tiles spans most of the runs), read
/// in batches of 4 KiB; the data bytes read are the data files' (with a
/// tile opened for its bounds then read again per run it spans, they were
/// several times that), and the cells those of the whole read.
#[test]
fn hilbert_runs_over_strings_decode_each_tile_once() {
    use tiledb_runtime::array::{Array, OpenOptions};
    use tiledb_runtime::filter::Datatype;
    use tiledb_runtime::read::read;
    use tiledb_runtime::schema::{AttributeSpec, DimensionSpec, SchemaBuilder, SchemaOrder};
    use tiledb_runtime::write::{Column as WriteColumn, Write};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hilbert-strings");
    let schema = SchemaBuilder::sparse()
        .dimension(DimensionSpec::string("s"))
        .dimension(DimensionSpec::new::<i64>("y", 0, 99, Some(100)))
        .orders(SchemaOrder::RowMajor, SchemaOrder::Hilbert)
        .attribute(AttributeSpec::new("v", Datatype::Int64))
        .capacity(100);
    let array = Array::create_path(&path, &schema).unwrap();
    for (cells, stride, at) in [(20_000i64, 1i64, 1u64), (300, 61, 2)] {
        // Scrambled, so that Hilbert order is not the strings' order.
        let j: Vec<i64> = (0..cells).map(|i| (i * stride * 7919) % 20_011).collect();
        let s: Vec<String> = j.iter().map(|j| format!("w{:05}", j / 4)).collect();
        let y: Vec<i64> = j.iter().map(|j| j % 4).collect();
        let columns = vec![
            WriteColumn::from_strings("s", Datatype::StringAscii, &s),
            WriteColumn::from_values("y", &y),
            WriteColumn::from_values("v", &j),
        ];
        array.write(&Write::sparse(columns).at(at)).unwrap();
    }
    let query = ReadQuery {
        layout: ResultOrder::Global,
        ..ReadQuery::default()
    };
    let (counted_array, counter) = counted(&path);
    let mut joined: Option<ReadResult> = None;
    let mut count = 0;
    for batch in batches(counted_array.snapshot(), &query, 4 << 10).unwrap() {
        let batch = batch.unwrap();
        count += 1;
        match &mut joined {
            None => joined = Some(batch),
            Some(all) => {
                for (into, part) in all
                    .dimensions
                    .iter_mut()
                    .chain(&mut all.attributes)
                    .zip(batch.dimensions.iter().chain(&batch.attributes))
                {
                    for i in 0..part.len() {
                        let (bytes, valid) = part.cell(i);
                        into.push(bytes, valid);
                    }
                }
            }
        }
    }
    assert!(count > 20, "{count} batches");
    let fresh = Array::open_path(&path, OpenOptions::default()).unwrap();
    let whole = read(fresh.snapshot(), &query).unwrap();
    let joined = joined.unwrap();
    assert_eq!(joined.cell_count(), whole.cell_count(), "cells");
    let columns = |r: &ReadResult| -> Vec<(Vec<u8>, Option<Vec<u64>>)> {
        let fields = r.dimensions.iter().chain(&r.attributes);
        fields
            .map(|c| (c.data.clone(), c.offsets.clone()))
            .collect()
    };
    assert!(
        columns(&joined) == columns(&whole),
        "the batches joined differ from the whole read"
    );
    let (read_bytes, files) = (counter.load(Ordering::Relaxed), data_file_bytes(&path));
    println!("{read_bytes} data bytes read of {files} in the data files, {count} batches");
    assert!(
        read_bytes <= files,
        "{read_bytes} data bytes read for {files} in the data files: tiles decoded again"
    );
}
