//! The one-number global order of integer dimensions (`Grid`) against the
//! general path it replaces (keys by tile, then coordinates compared as
//! values): on random cells of every integer width, signed domains across
//! zero and domains at the type's ends, every tile and cell order, with
//! and without duplicates, the same permutation, the same refusals with
//! the same messages.

use super::*;
use crate::column::CellValue;
use crate::format::io::write_to_vec;
use crate::schema::{AttributeSpec, DimensionSpec, SchemaBuilder};

/// A small xorshift generator: reproducible cells without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `[lo, hi]`, the ends themselves often.
    fn within(&mut self, lo: i128, hi: i128) -> i128 {
        match self.next() % 8 {
            0 => lo,
            1 => hi,
            _ => lo + (self.next() as i128).rem_euclid(hi - lo + 1),
        }
    }
}

fn schema(dims: Vec<DimensionSpec>, tile: SchemaOrder, cell: SchemaOrder) -> ArraySchema {
    let mut builder = SchemaBuilder::sparse().attribute(AttributeSpec::new("a", Datatype::Int32));
    for d in dims {
        builder = builder.dimension(d);
    }
    builder.tile_order = tile;
    builder.cell_order = cell;
    let built = builder.build().expect("a valid schema");
    let payload = write_to_vec(&built.schema, (), "ArraySchema").expect("serialized");
    ArraySchema::from_payload(crate::format::generated::SCHEMA_DIR, &payload).expect("parsed back")
}

/// The cells `order` of `column`.
fn permuted(column: &Column, order: &[usize]) -> Column {
    let size = column.cell_size().expect("fixed cells");
    let mut out = column.clone();
    out.data = order
        .iter()
        .flat_map(|&i| column.data[i * size..(i + 1) * size].to_vec())
        .collect();
    out
}

/// Compares the grid with the general path on `n` random cells of two
/// dimensions of type `T` in `[lo, hi]`, tiles of `extent`, half the
/// values from a narrow band at `lo`, so that cells repeat.
fn compare<T>(lo: T, hi: T, extent: T, seed: u64)
where
    T: CellValue + Copy + Into<i128> + TryFrom<i128>,
{
    let mut rng = Rng(seed);
    let (l, h) = (lo.into(), hi.into());
    let orders = [SchemaOrder::RowMajor, SchemaOrder::ColMajor];
    for (tile, cell) in orders.iter().flat_map(|&t| orders.map(|c| (t, c))) {
        let s = schema(
            vec![
                DimensionSpec::new::<T>("x", lo, hi, Some(extent)),
                DimensionSpec::new::<T>("y", lo, hi, Some(extent)),
            ],
            tile,
            cell,
        );
        let n = 600;
        // Half the cells in a narrow band: duplicates are certain.
        let band = (h - l).min(20);
        let mut value = |k: usize| {
            let v = if k.is_multiple_of(2) {
                rng.within(l, h)
            } else {
                rng.within(l, l + band)
            };
            T::try_from(v).ok().expect("in the type")
        };
        let xs: Vec<T> = (0..n).map(&mut value).collect();
        let ys: Vec<T> = (0..n).map(&mut value).collect();
        let (x, y) = (Column::from_values("x", &xs), Column::from_values("y", &ys));
        let fast = Coordinates::new(&s, &[&x, &y]);
        assert!(fast.grid.is_some(), "{} fits a grid", T::DATATYPE);
        let mut general = Coordinates::new(&s, &[&x, &y]);
        general.grid = None;
        let what = format!("{} tiles {tile:?} cells {cell:?}", T::DATATYPE);

        let order = fast.global_order(n, None).unwrap();
        assert_eq!(order, general.global_order(n, None).unwrap(), "{what}");
        let stamps: Vec<u64> = (0..n as u64).map(|i| i % 3).collect();
        assert_eq!(
            fast.global_order(n, Some(&stamps)).unwrap(),
            general.global_order(n, Some(&stamps)).unwrap(),
            "{what}, newest first"
        );
        for dups in [true, false] {
            let (a, b) = (fast.sorted_cells(n, dups), general.sorted_cells(n, dups));
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{what}, dups {dups}");
        }
        assert!(
            fast.sorted_cells(n, false).is_err(),
            "{what}: the band repeats cells"
        );

        // The cells given in global order: accepted with duplicates
        // allowed, refused at the first repeat otherwise, and refused at
        // the first pair out of order once two cells are swapped.
        let (sx, sy) = (permuted(&x, &order), permuted(&y, &order));
        let mut swapped = order.clone();
        let at = (1..n)
            .find(|&k| general.compare_coords(order[k - 1], order[k]).is_ne() && k > n / 2)
            .expect("two distinct cells");
        swapped.swap(at - 1, at);
        let (wx, wy) = (permuted(&x, &swapped), permuted(&y, &swapped));
        for (cx, cy, label) in [(&sx, &sy, "sorted"), (&wx, &wy, "swapped")] {
            let fast = Coordinates::new(&s, &[cx, cy]);
            let mut general = Coordinates::new(&s, &[cx, cy]);
            general.grid = None;
            for dups in [true, false] {
                let (a, b) = (
                    fast.check_written_order(n, dups),
                    general.check_written_order(n, dups),
                );
                assert_eq!(
                    format!("{a:?}"),
                    format!("{b:?}"),
                    "{what}, {label}, dups {dups}"
                );
            }
        }
        assert!(Coordinates::new(&s, &[&sx, &sy])
            .check_written_order(n, true)
            .is_ok());
        let refused = Coordinates::new(&s, &[&wx, &wy]).check_written_order(n, true);
        assert!(
            format!("{refused:?}").contains(&format!("cells {} and {at} are not", at - 1)),
            "{what}: {refused:?}"
        );
    }
}

#[test]
fn grid_order_equals_general_order_for_every_integer_width() {
    compare::<i8>(-128, 126, 10, 1);
    compare::<u8>(1, 255, 16, 2);
    compare::<i16>(-300, 299, 7, 3);
    compare::<u16>(65_000, 65_535, 100, 4);
    compare::<i32>(-100_000, 100_000, 1000, 5);
    compare::<u32>(u32::MAX - 5000, u32::MAX, 64, 6);
    compare::<i64>(-1_000_000, 999_999, 5000, 7);
    compare::<i64>(i64::MIN, i64::MIN + 10_000, 333, 8);
    compare::<i64>(i64::MAX - 10_999, i64::MAX - 1000, 1000, 9);
    compare::<u64>(u64::MAX - 9999, u64::MAX, 250, 10);
    // Keys up to 2^60: no room for the cell index beside them (the sort
    // keeps key and index apart).
    compare::<i64>(0, (1 << 30) - 1, 32, 11);
}

#[test]
fn packed_sort_only_where_key_and_index_fit() {
    let s = |hi: i64, extent: i64| {
        schema(
            vec![
                DimensionSpec::new::<i64>("x", 0, hi, Some(extent)),
                DimensionSpec::new::<i64>("y", 0, hi, Some(extent)),
            ],
            SchemaOrder::RowMajor,
            SchemaOrder::RowMajor,
        )
    };
    let values: Vec<i64> = [3, 1, 2, 1].into_iter().chain(0..16).collect();
    let x = Column::from_values("x", &values);
    let (narrow, wide) = (s(999, 10), s((1 << 30) - 1, 32));
    let grid = |s| Coordinates::new(s, &[&x, &x]).grid.expect("a grid");
    let (packed, bits) = grid(&narrow).sorted_packed(4).expect("fits");
    assert_eq!(bits, 2);
    let cells: Vec<u64> = packed.iter().map(|p| p & 3).collect();
    assert_eq!(cells, [1, 3, 2, 0]);
    // Keys below 2^60 and 4 bits of index fit; 5 bits do not.
    assert!(grid(&wide).sorted_packed(16).is_some());
    assert!(grid(&wide).sorted_packed(17).is_none());
}

#[test]
fn cells_outside_the_domain_leave_the_grid_to_the_general_path() {
    let s = schema(
        vec![DimensionSpec::new::<i32>("x", 0, 99, Some(10))],
        SchemaOrder::RowMajor,
        SchemaOrder::RowMajor,
    );
    let x = Column::from_values("x", &[5i32, 120, -3, 7]);
    let fast = Coordinates::new(&s, &[&x]);
    let mut general = Coordinates::new(&s, &[&x]);
    general.grid = None;
    assert_eq!(
        fast.global_order(4, None).unwrap(),
        general.global_order(4, None).unwrap()
    );
    assert_eq!(
        format!("{:?}", fast.check_written_order(4, false)),
        format!("{:?}", general.check_written_order(4, false))
    );
}

#[test]
fn domains_too_wide_for_one_number_use_no_grid() {
    let wide = schema(
        vec![
            DimensionSpec::new::<i64>("x", -(1 << 62), 1 << 62, Some(1 << 40)),
            DimensionSpec::new::<i64>("y", -(1 << 62), 1 << 62, Some(1 << 40)),
        ],
        SchemaOrder::RowMajor,
        SchemaOrder::RowMajor,
    );
    let x = Column::from_values("x", &[0i64]);
    assert!(Coordinates::new(&wide, &[&x, &x]).grid.is_none());
}

/// Float coordinates for [`float_ranks_equal_the_general_path`]: the
/// domain's ends, -0 and +0, every tile boundary and the float just below
/// it, and random values, half from a narrow band so that cells repeat.
fn float_values(lo: f64, hi: f64, extent: f64, rng: &mut Rng, n: usize) -> Vec<f64> {
    let mut special = vec![lo, hi, -0.0, 0.0, hi.next_down(), lo.next_up()];
    let mut edge = lo;
    while edge <= hi {
        special.extend([edge, edge.next_down().max(lo)]);
        edge += extent;
    }
    (0..n)
        .map(|k| {
            let r = rng.next();
            match k % 4 {
                0 => special[(r % special.len() as u64) as usize],
                1 => lo + (r % 40) as f64 * (extent / 8.0),
                _ => lo + (r >> 11) as f64 / (1u64 << 53) as f64 * (hi - lo),
            }
        })
        .collect()
}

/// The typed tile ranks of float dimensions against the general path
/// (each coordinate decoded to a `Scalar`, its tile found by
/// `GlobalOrder::tile_of`): float64 and float32, every tile and cell order,
/// the same ranks, permutation, refusals and messages.
#[test]
fn float_ranks_equal_the_general_path() {
    let orders = [SchemaOrder::RowMajor, SchemaOrder::ColMajor];
    // (lo, hi, extent): a domain ending inside a tile, one ending on a
    // tile boundary (its upper bound alone in the last tile), one across
    // zero with a fractional extent.
    let domains = [
        (-1000.5, 1000.5, 100.0),
        (0.0, 100.0, 10.0),
        (-10.25, 10.25, 0.75),
    ];
    let mut rng = Rng(99);
    for single in [false, true] {
        for (lo, hi, extent) in domains {
            for (tile, cell) in orders.iter().flat_map(|&t| orders.map(|c| (t, c))) {
                let dims = if single {
                    let (lo, hi, e) = (lo as f32, hi as f32, extent as f32);
                    vec![
                        DimensionSpec::new::<f32>("x", lo, hi, Some(e)),
                        DimensionSpec::new::<f32>("y", lo, hi, Some(e)),
                    ]
                } else {
                    vec![
                        DimensionSpec::new::<f64>("x", lo, hi, Some(extent)),
                        DimensionSpec::new::<f64>("y", lo, hi, Some(extent)),
                    ]
                };
                let s = schema(dims, tile, cell);
                let n = 500;
                let column = |name: &str, v: Vec<f64>| {
                    if single {
                        let v: Vec<f32> = v.iter().map(|&x| x as f32).collect();
                        Column::from_values(name, &v)
                    } else {
                        Column::from_values(name, &v)
                    }
                };
                let x = column("x", float_values(lo, hi, extent, &mut rng, n));
                let y = column("y", float_values(lo, hi, extent, &mut rng, n));
                let what = format!("float32 {single} [{lo}, {hi}] / {extent} {tile:?} {cell:?}");
                compare_float_paths(&s, &x, &y, n, &what);
            }
        }
    }
}

/// The typed and general paths of `Coordinates` on the cells `x`, `y`.
fn compare_float_paths(s: &ArraySchema, x: &Column, y: &Column, n: usize, what: &str) {
    let typed = Coordinates::new(s, &[x, y]);
    assert!(typed.grid.is_none() && typed.ranks.is_some(), "{what}");
    let mut general = Coordinates::new(s, &[x, y]);
    general.ranks = None;
    let numbers = |c: &Coordinates| match c.keys(n).unwrap() {
        Keys::Numbers(k) => k,
        Keys::Full(_) => panic!("{what}: every cell has a tile rank"),
    };
    let ranks = numbers(&typed);
    assert_eq!(ranks, numbers(&general), "{what}");
    // Both tiles at the domain's ends are used.
    let last = ranks.iter().max().copied();
    assert!(ranks.contains(&0) && last > Some(0), "{what}");
    let order = typed.global_order(n, None).unwrap();
    assert_eq!(order, general.global_order(n, None).unwrap(), "{what}");
    let stamps: Vec<u64> = (0..n as u64).map(|i| i % 3).collect();
    assert_eq!(
        typed.global_order(n, Some(&stamps)).unwrap(),
        general.global_order(n, Some(&stamps)).unwrap(),
        "{what}, newest first"
    );
    for dups in [true, false] {
        let (a, b) = (typed.sorted_cells(n, dups), general.sorted_cells(n, dups));
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "{what}, dups {dups}");
    }
    // Given in global order: accepted (with duplicates allowed); two
    // distinct neighbours swapped: refused at the same pair by both.
    let (sx, sy) = (permuted(x, &order), permuted(y, &order));
    let at = (1..n)
        .find(|&k| general.compare_coords(order[k - 1], order[k]).is_ne() && k > n / 2)
        .expect("two distinct cells");
    let mut swapped = order.clone();
    swapped.swap(at - 1, at);
    let (wx, wy) = (permuted(x, &swapped), permuted(y, &swapped));
    for (cx, cy, label) in [(&sx, &sy, "sorted"), (&wx, &wy, "swapped")] {
        let typed = Coordinates::new(s, &[cx, cy]);
        let mut general = Coordinates::new(s, &[cx, cy]);
        general.ranks = None;
        for dups in [true, false] {
            let (a, b) = (
                typed.check_written_order(n, dups),
                general.check_written_order(n, dups),
            );
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{what}, {label}");
        }
    }
    assert!(Coordinates::new(s, &[&sx, &sy])
        .check_written_order(n, true)
        .is_ok());
    let refused = Coordinates::new(s, &[&wx, &wy]).check_written_order(n, true);
    assert!(
        format!("{refused:?}").contains(&format!("cells {} and {at} are not", at - 1)),
        "{what}: {refused:?}"
    );
}

/// -0 and +0 share a tile and compare equal (one cell twice: refused
/// without duplicates); NaN gets the general path's tile, and a write
/// holding it is refused as outside the domain before anything is
/// ordered.
#[test]
fn float_zero_signs_and_nan() {
    let s = schema(
        vec![DimensionSpec::new::<f64>("x", -10.0, 10.0, Some(2.5))],
        SchemaOrder::RowMajor,
        SchemaOrder::RowMajor,
    );
    let zeros = Column::from_values("x", &[-0.0f64, 0.0]);
    let typed = Coordinates::new(&s, &[&zeros]);
    assert!(typed.ranks.is_some());
    assert_eq!(
        typed.ranks.as_ref().unwrap().rank(0),
        typed.ranks.as_ref().unwrap().rank(1)
    );
    let refused = typed.sorted_cells(2, false);
    assert!(
        format!("{refused:?}").contains("share coordinates"),
        "{refused:?}"
    );
    assert!(typed.check_written_order(2, false).is_err());
    assert_eq!(typed.sorted_cells(2, true).unwrap(), [0, 1]);

    let with_nan = Column::from_values("x", &[1.0f64, f64::NAN, -3.0]);
    let typed = Coordinates::new(&s, &[&with_nan]);
    let mut general = Coordinates::new(&s, &[&with_nan]);
    general.ranks = None;
    let ranks = |c: &Coordinates| match c.keys(3).unwrap() {
        Keys::Numbers(k) => k,
        Keys::Full(_) => Vec::new(),
    };
    assert_eq!(ranks(&typed), ranks(&general));
    let write = crate::write::Write::sparse(vec![
        with_nan.clone(),
        Column::from_values("a", &[1i32, 2, 3]),
    ]);
    let refused = super::super::validate::validate(&s, &write);
    assert!(
        format!("{:?}", refused.err()).contains("cell 1: coordinate NaN of dimension x is outside"),
        "NaN refused"
    );
}

/// A global-order write on a grid is checked for domain and order in one
/// pass; a refusal still names what TileDB checks first (the domain), a
/// lone cell and cells outside a narrower current domain are still seen.
#[test]
fn global_order_checked_in_one_pass_refuses_as_both_checks() {
    use crate::write::{Write, WriteLayout};
    let dims = || vec![DimensionSpec::new::<i32>("d", 0, 99, Some(10))];
    let plain = schema(dims(), SchemaOrder::RowMajor, SchemaOrder::RowMajor);
    let mut builder = SchemaBuilder::sparse()
        .attribute(AttributeSpec::new("a", Datatype::Int32))
        .current_domain(vec![(
            0i32.to_le_bytes().to_vec(),
            9i32.to_le_bytes().to_vec(),
        )]);
    builder = builder.dimension(dims().remove(0));
    let built = builder.build().expect("a valid schema");
    let payload = write_to_vec(&built.schema, (), "ArraySchema").expect("serialized");
    let narrowed = ArraySchema::from_payload(crate::format::generated::SCHEMA_DIR, &payload)
        .expect("parsed back");
    let outcome = |s: &ArraySchema, d: &[i32]| {
        let a: Vec<i32> = (0..d.len() as i32).collect();
        let write = Write::sparse(vec![
            Column::from_values("d", d),
            Column::from_values("a", &a),
        ])
        .with_layout(WriteLayout::GlobalOrder);
        format!(
            "{:?}",
            super::super::validate::validate(s, &write).map(|_| ())
        )
    };
    assert_eq!(outcome(&plain, &[1, 2, 15, 99]), "Ok(())");
    let both = outcome(&plain, &[3, 1, 100]);
    assert!(
        both.contains("cell 2: coordinate 100 of dimension d is outside"),
        "{both}"
    );
    let lone = outcome(&plain, &[100]);
    assert!(lone.contains("outside"), "{lone}");
    let current = outcome(&narrowed, &[2, 20]);
    assert!(
        current.contains("cell 1: coordinate 20 of dimension d is outside [0, 9]"),
        "{current}"
    );
    let unordered = outcome(&plain, &[3, 1]);
    assert!(
        unordered.contains("cells 0 and 1 are not in the global order"),
        "{unordered}"
    );
    let repeated = outcome(&plain, &[3, 3]);
    assert!(repeated.contains("share coordinates"), "{repeated}");
}
