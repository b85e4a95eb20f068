//! A writer of arrays at format versions 3 to 9, as the TileDB releases of
//! those versions (1.6 to 2.3) laid them out, built from the generated
//! layouts at that version: the schema in `__array_schema.tdb` at the array
//! root; one fragment folder `__<t>_<t>_<uuid>` (versions 3-4, committed by
//! its `__fragment_metadata.tdb`) or `__<t>_<t>_<uuid>_<v>` with a
//! `<folder>.ok` beside it (5-9); data files named after the field (3-7;
//! version 8 percent-encodes the names, which these plain names do not
//! need) or by index (`a<i>`, `d<j>`, 9); coordinates zipped in one
//! `__coords.tdb` before version 5 (dimension after dimension within the
//! tile) and one file per dimension from 5; the fragment metadata as the
//! R-tree, then per field slot the tile offsets, var offsets, var sizes and
//! (7+) validity offsets as generic tiles, then the raw footer — with no
//! length trailer, since every dimension is fixed-sized.
//!
//! Every dimension is INT64 (versions 3-4 share one type); attributes are
//! INT32, FLOAT64 or var-sized CHAR, unfiltered; each fragment is one tile.

#![allow(dead_code)] // each test file uses a part

use std::path::Path;

use tiledb_runtime::format::generated::{
    ArraySchema, ArrayType, Attribute, Datatype, Dimension, DimensionShape, Domain, FilterPipeline,
    FragmentFooter, FragmentFooterBinWriteArgs, Layout, NDRectangle, RTree, RTreeBinWriteArgs,
    RTreeLevel, Range, Tile, TileChunk, TileOffsets,
};
use tiledb_runtime::format::io::write_to_vec;
use tiledb_runtime::tile::generic::write_generic_tile;

/// An INT64 dimension `[lo, hi]` with tile extent `extent`.
#[derive(Debug, Clone)]
pub struct Dim {
    pub name: &'static str,
    pub lo: i64,
    pub hi: i64,
    pub extent: i64,
}

/// An attribute: INT32, FLOAT64, or var-sized CHAR (`Datatype::Char`).
#[derive(Debug, Clone)]
pub struct Attr {
    pub name: &'static str,
    pub datatype: Datatype,
}

impl Attr {
    fn var(&self) -> bool {
        self.datatype == Datatype::Char
    }
}

/// An array of one fragment holding one tile.
#[derive(Debug, Clone)]
pub struct OldArray {
    pub dense: bool,
    pub dims: Vec<Dim>,
    pub attrs: Vec<Attr>,
    /// Sparse: the coordinates of every cell, in global order (one tile).
    /// Dense: empty (the fragment covers the whole domain, which is one tile).
    pub coords: Vec<Vec<i64>>,
    /// Per attribute, the bytes of each cell in the fragment's cell order.
    pub values: Vec<Vec<Vec<u8>>>,
}

fn pipeline() -> FilterPipeline {
    FilterPipeline {
        max_chunk_size: 65536,
        filters: Vec::new(),
    }
}

/// The default fill value TileDB writes for an attribute (versions 6+).
fn fill(datatype: Datatype) -> Vec<u8> {
    match datatype {
        Datatype::Int32 => i32::MIN.to_le_bytes().to_vec(),
        Datatype::Float64 => f64::NAN.to_le_bytes().to_vec(),
        _ => vec![0x80],
    }
}

impl OldArray {
    /// The cells of the fragment in its order: per cell, the coordinates.
    pub fn cell_coords(&self) -> Vec<Vec<i64>> {
        if !self.dense {
            return self.coords.clone();
        }
        // Row-major over the domain (one tile, row-major cell order).
        let mut cells = vec![Vec::new()];
        for dim in &self.dims {
            cells = cells
                .into_iter()
                .flat_map(|prefix| {
                    (dim.lo..=dim.hi).map(move |x| {
                        let mut cell = prefix.clone();
                        cell.push(x);
                        cell
                    })
                })
                .collect();
        }
        cells
    }

    /// The stored schema at `version`.
    pub fn schema(&self, version: u32) -> ArraySchema {
        let dimensions = self
            .dims
            .iter()
            .map(|d| {
                let mut domain = d.lo.to_le_bytes().to_vec();
                domain.extend(d.hi.to_le_bytes());
                Dimension {
                    name: d.name.as_bytes().to_vec(),
                    datatype: Datatype::Int64,
                    cell_val_num: 1,
                    filters: Some(pipeline()),
                    domain,
                    null_extent: 0,
                    extent: Some(d.extent.to_le_bytes().to_vec()),
                }
            })
            .collect();
        let attributes = self
            .attrs
            .iter()
            .map(|a| Attribute {
                name: a.name.as_bytes().to_vec(),
                datatype: a.datatype,
                cell_val_num: if a.var() { u32::MAX } else { 1 },
                filters: pipeline(),
                fill: Some(fill(a.datatype)),
                ..Default::default()
            })
            .collect();
        ArraySchema {
            version,
            array_type: if self.dense {
                ArrayType::Dense
            } else {
                ArrayType::Sparse
            },
            tile_order: Layout::RowMajor,
            cell_order: Layout::RowMajor,
            capacity: 10_000,
            coords_filters: pipeline(),
            offsets_filters: pipeline(),
            validity_filters: Some(pipeline()),
            domain: Domain {
                datatype: Some(Datatype::Int64),
                dimensions,
            },
            attributes,
            ..Default::default()
        }
    }

    fn shapes(&self) -> Vec<DimensionShape> {
        vec![
            DimensionShape {
                var: false,
                coord_size: 8,
            };
            self.dims.len()
        ]
    }

    /// The non-empty domain: the whole domain (dense) or the coordinates' bounds.
    fn non_empty_domain(&self) -> NDRectangle {
        let ranges = (0..self.dims.len())
            .map(|j| {
                let (lo, hi) = if self.dense {
                    (self.dims[j].lo, self.dims[j].hi)
                } else {
                    let column = self.coords.iter().map(|c| c[j]);
                    (column.clone().min().unwrap(), column.max().unwrap())
                };
                let mut data = lo.to_le_bytes().to_vec();
                data.extend(hi.to_le_bytes());
                Range {
                    data,
                    ..Default::default()
                }
            })
            .collect();
        NDRectangle { ranges }
    }

    /// Writes the array at `version` (3..=9) into `dir` (which must not exist).
    pub fn write(&self, dir: &Path, version: u32) {
        assert!((3..=9).contains(&version), "a writer of versions 3 to 9");
        std::fs::create_dir_all(dir).unwrap();
        let schema = write_to_vec(&self.schema(version), (), "ArraySchema").unwrap();
        let schema_tile = write_generic_tile(&schema, version, None).unwrap();
        std::fs::write(dir.join("__array_schema.tdb"), schema_tile).unwrap();
        let t = 1_600_000_000_000u64 + u64::from(version);
        let label = format!("{version:032x}");
        let folder = if version < 5 {
            format!("__{t}_{t}_{label}")
        } else {
            format!("__{t}_{t}_{label}_{version}")
        };
        let fragment = dir.join(&folder);
        std::fs::create_dir(&fragment).unwrap();
        let slots = self.data_files(&fragment, version);
        std::fs::write(
            fragment.join("__fragment_metadata.tdb"),
            self.fragment_metadata(version, &slots),
        )
        .unwrap();
        if version >= 5 {
            std::fs::write(dir.join(format!("{folder}.ok")), b"").unwrap();
        }
    }

    /// The field slots of the footer: attributes, the `__coords` slot, then
    /// (5+) the dimensions.
    fn slot_count(&self, version: u32) -> usize {
        self.attrs.len() + 1 + if version >= 5 { self.dims.len() } else { 0 }
    }

    /// Writes the data files; gives what each field slot holds.
    fn data_files(&self, fragment: &Path, version: u32) -> Vec<Slot> {
        let mut slots = vec![Slot::default(); self.slot_count(version)];
        for (i, attr) in self.attrs.iter().enumerate() {
            let stem = if version >= 9 {
                format!("a{i}")
            } else {
                attr.name.to_string()
            };
            let cells = &self.values[i];
            if attr.var() {
                let mut offsets = Vec::new();
                let mut data = Vec::new();
                for cell in cells {
                    offsets.extend((data.len() as u64).to_le_bytes());
                    data.extend(cell);
                }
                slots[i] = Slot::written(fragment, &stem, &offsets, Some(&data));
            } else {
                slots[i] = Slot::written(fragment, &stem, &cells.concat(), None);
            }
        }
        if !self.dense {
            let a = self.attrs.len();
            if version < 5 {
                // Zipped coordinates in one file, dimension after dimension.
                let mut tile = Vec::new();
                for j in 0..self.dims.len() {
                    for cell in &self.coords {
                        tile.extend(cell[j].to_le_bytes());
                    }
                }
                slots[a] = Slot::written(fragment, "__coords", &tile, None);
            } else {
                for (j, dim) in self.dims.iter().enumerate() {
                    let stem = if version >= 9 {
                        format!("d{j}")
                    } else {
                        dim.name.to_string()
                    };
                    let tile: Vec<u8> = self
                        .coords
                        .iter()
                        .flat_map(|c| c[j].to_le_bytes())
                        .collect();
                    slots[a + 1 + j] = Slot::written(fragment, &stem, &tile, None);
                }
            }
        }
        slots
    }

    /// `__fragment_metadata.tdb`: the generic tiles, then the footer.
    fn fragment_metadata(&self, version: u32, slots: &[Slot]) -> Vec<u8> {
        let shapes = self.shapes();
        let mut file = Vec::new();
        let mut push_tile = |payload: Vec<u8>| -> u64 {
            let at = file.len() as u64;
            file.extend(write_generic_tile(&payload, version, None).unwrap());
            at
        };
        let levels = if self.dense {
            Vec::new()
        } else {
            vec![RTreeLevel {
                mbrs: vec![self.non_empty_domain()],
            }]
        };
        let rtree = RTree {
            dim_num: Some(self.dims.len() as u32),
            fanout: 10,
            datatype: Some(Datatype::Int64 as u8),
            levels,
        };
        let rtree_args = RTreeBinWriteArgs::builder()
            .version(version)
            .dims(shapes.clone())
            .finalize();
        let rtree_offset = push_tile(write_to_vec(&rtree, rtree_args, "RTree").unwrap());
        let offsets_tile =
            |values: Vec<u64>| write_to_vec(&TileOffsets { values }, (), "TileOffsets").unwrap();
        let a = self.attrs.len();
        // Versions 3-4: var lists have A entries, fixed lists A + 1.
        let var_slots = if version >= 5 { slots.len() } else { a };
        let tile_offsets_offsets: Vec<u64> = slots
            .iter()
            .map(|s| push_tile(offsets_tile(s.tiles(0))))
            .collect();
        let tile_var_offsets_offsets: Vec<u64> = slots[..var_slots]
            .iter()
            .map(|s| push_tile(offsets_tile(if s.var { s.tiles(0) } else { vec![] })))
            .collect();
        let tile_var_sizes_offsets: Vec<u64> = slots[..var_slots]
            .iter()
            .map(|s| push_tile(offsets_tile(if s.var { vec![s.var_size] } else { vec![] })))
            .collect();
        let validity = (version >= 7).then(|| {
            slots
                .iter()
                .map(|_| push_tile(offsets_tile(vec![])))
                .collect::<Vec<u64>>()
        });
        let cells = self.cell_coords().len() as u64;
        let footer = FragmentFooter {
            version,
            dense: self.dense,
            non_empty_domain: self.non_empty_domain(),
            sparse_tile_num: u64::from(!self.dense),
            last_tile_cell_num: cells,
            file_sizes: slots.iter().map(|s| s.size).collect(),
            file_var_sizes: slots[..var_slots].iter().map(|s| s.var_file_size).collect(),
            file_validity_sizes: (version >= 7).then(|| vec![0; slots.len()]),
            rtree_offset,
            tile_offsets_offsets,
            tile_var_offsets_offsets,
            tile_var_sizes_offsets,
            tile_validity_offsets_offsets: validity,
            ..Default::default()
        };
        file.extend(footer_bytes(&footer, a as u64, &shapes));
        file
    }
}

/// The footer as the generated layout writes it.
pub fn footer_bytes(
    footer: &FragmentFooter,
    num_attributes: u64,
    dims: &[DimensionShape],
) -> Vec<u8> {
    let args = FragmentFooterBinWriteArgs::builder()
        .num_attributes(num_attributes)
        .dims(dims.to_vec())
        .finalize();
    write_to_vec(footer, args, "FragmentFooter").unwrap()
}

/// One field slot's files: sizes, and whether it holds a tile.
#[derive(Debug, Clone, Default)]
struct Slot {
    /// Holds one tile (else the slot is unused: empty lists).
    present: bool,
    var: bool,
    size: u64,
    var_file_size: u64,
    var_size: u64,
}

impl Slot {
    /// Writes `<stem>.tdb` (and `<stem>_var.tdb`) as one unfiltered tile each.
    fn written(fragment: &Path, stem: &str, fixed: &[u8], var: Option<&[u8]>) -> Slot {
        let fixed_tile = unfiltered_tile(fixed);
        std::fs::write(fragment.join(format!("{stem}.tdb")), &fixed_tile).unwrap();
        let mut slot = Slot {
            present: true,
            size: fixed_tile.len() as u64,
            ..Slot::default()
        };
        if let Some(var) = var {
            let var_tile = unfiltered_tile(var);
            std::fs::write(fragment.join(format!("{stem}_var.tdb")), &var_tile).unwrap();
            slot.var = true;
            slot.var_file_size = var_tile.len() as u64;
            slot.var_size = var.len() as u64;
        }
        slot
    }

    /// The tile offsets list: one tile at `offset`, or none.
    fn tiles(&self, offset: u64) -> Vec<u64> {
        if self.present {
            vec![offset]
        } else {
            Vec::new()
        }
    }
}

/// A data tile through an empty filter pipeline: one chunk, no metadata.
fn unfiltered_tile(data: &[u8]) -> Vec<u8> {
    let tile = Tile {
        chunks: vec![TileChunk {
            orig_len: data.len() as u32,
            metadata: Vec::new(),
            data: data.to_vec(),
        }],
    };
    write_to_vec(&tile, (), "Tile").unwrap()
}
