//! Typed reads: [`QueryBuilder`] (ranges by dimension name in Rust types,
//! attributes, result order) and [`TypedResult`] (cells as typed slices,
//! strings, dates and times). Every value is checked against the field's
//! datatype; a mismatch is a usage error, never a silent conversion.
//!
//! ```no_run
//! # fn main() -> tiledb_runtime::error::Result<()> {
//! use tiledb_runtime::array::{Array, OpenOptions};
//! use tiledb_runtime::read::ResultOrder;
//!
//! let array = Array::open_path("my_array", OpenOptions::default())?;
//! let result = array
//!     .query()
//!     .range("rows", 1..=4)?
//!     .attributes(["a"])
//!     .order(ResultOrder::RowMajor)
//!     .read()?;
//! let a = result.values::<i32>("a")?;
//! # Ok(()) }
//! ```
//!
//! The untyped [`ReadQuery`] with byte ranges stays underneath (the
//! conformance kit uses it); [`QueryBuilder::raw_query`] shows the one built.

mod bounds;
mod result;
mod time;

use std::ops::RangeInclusive;

pub use bounds::RangeValue;
pub use result::{CellType, TypedResult, VarCells};

use crate::column::Column;
use crate::condition::QueryCondition;
use crate::error::{Error, Result};
use crate::read::query::{ReadQuery, ResultOrder};
use crate::read::result::ReadResult;
use crate::snapshot::Snapshot;

/// A read being described: start one with [`Array::query`](crate::array::Array::query).
#[derive(Clone)]
pub struct QueryBuilder<'a> {
    snapshot: &'a Snapshot,
    query: ReadQuery,
    condition: Option<QueryCondition>,
}

impl std::fmt::Debug for QueryBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryBuilder")
            .field("query", &self.query)
            .finish_non_exhaustive()
    }
}

impl<'a> QueryBuilder<'a> {
    /// A read of every attribute and every cell (sparse) or the non-empty
    /// domain (dense), in row-major order, with coordinates.
    pub fn new(snapshot: &'a Snapshot) -> QueryBuilder<'a> {
        let dims = snapshot.schema().dimensions.len();
        QueryBuilder {
            snapshot,
            query: ReadQuery {
                ranges: vec![Vec::new(); dims],
                ..ReadQuery::default()
            },
            condition: None,
        }
    }

    /// Adds the inclusive range `range` on dimension `dimension`; several on
    /// one dimension make a multi-range read. A bound whose type does not
    /// fit the dimension's datatype (see [`RangeValue`]), an unknown
    /// dimension or a range whose low bound is above its high bound is a
    /// usage error.
    pub fn range<T: RangeValue>(
        mut self,
        dimension: &str,
        range: RangeInclusive<T>,
    ) -> Result<Self> {
        let (d, dim) = self.snapshot.schema().dimension(dimension).ok_or_else(|| {
            Error::Usage(format!("the array has no dimension named {dimension:?}"))
        })?;
        let (lo, hi) = range.into_inner();
        let bound = |v: &T| v.bound_bytes(dim).map_err(Error::Usage);
        let (lo, hi) = (bound(&lo)?, bound(&hi)?);
        let (lo_s, hi_s) = (
            crate::schema::Scalar::decode(dim.datatype, &lo),
            crate::schema::Scalar::decode(dim.datatype, &hi),
        );
        if let (Some(l), Some(h)) = (lo_s, hi_s) {
            if l.compare(&h) == std::cmp::Ordering::Greater {
                return Err(Error::Usage(format!(
                    "a range of dimension {dimension:?} has its low bound above its high bound"
                )));
            }
        }
        self.query.ranges[d].push((lo, hi));
        Ok(self)
    }

    /// Adds each range of `ranges` on `dimension` (a multi-range read).
    pub fn ranges<T: RangeValue>(
        self,
        dimension: &str,
        ranges: impl IntoIterator<Item = RangeInclusive<T>>,
    ) -> Result<Self> {
        ranges
            .into_iter()
            .try_fold(self, |builder, range| builder.range(dimension, range))
    }

    /// Reads only these attributes, in this order (an unknown name is a
    /// usage error at [`read`](Self::read)). An empty list returns only
    /// the coordinates.
    pub fn attributes<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.query.attributes = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// The order of the result cells (row-major by default).
    pub fn order(mut self, order: ResultOrder) -> Self {
        self.query.layout = order;
        self
    }

    /// Whether the result holds the coordinates of each cell (it does by default).
    pub fn coordinates(mut self, with_coordinates: bool) -> Self {
        self.query.skip_coordinates = !with_coordinates;
        self
    }

    /// Keeps only the cells that satisfy `condition`, in tiledb-py's `cond=`
    /// syntax (`"a > 5 and s == 'x'"`, see [`QueryCondition`]); a dense read
    /// keeps its shape and fills the cells that fail. A condition that does
    /// not fit the schema is a usage error.
    pub fn condition(self, condition: &str) -> Result<Self> {
        let condition = QueryCondition::parse(condition, self.snapshot.schema())?;
        Ok(self.with_condition(condition))
    }

    /// Keeps only the cells that satisfy an already checked condition.
    pub fn with_condition(mut self, condition: QueryCondition) -> Self {
        self.condition = Some(condition);
        self
    }

    /// What the builder holds: the snapshot, the query, the condition.
    pub(crate) fn parts(&self) -> (&'a Snapshot, &ReadQuery, Option<&QueryCondition>) {
        (self.snapshot, &self.query, self.condition.as_ref())
    }

    /// The untyped query this builder has built so far.
    pub fn raw_query(&self) -> &ReadQuery {
        &self.query
    }

    /// Runs the read.
    pub fn read(self) -> Result<TypedResult> {
        let snapshot = self.snapshot;
        let condition = self.condition.clone();
        let (query, enumerations, has_cells) = self.prepared()?;
        let result = if has_cells {
            match &condition {
                Some(c) => crate::read::conditioned::read_where(snapshot, &query, c)?,
                None => crate::read::read_retrying(snapshot, &query)?,
            }
        } else {
            empty_result(snapshot, &query)
        };
        Ok(TypedResult {
            result,
            enumerations,
        })
    }

    /// Runs the read in batches of at most `budget` bytes each, in the
    /// result order (see [`crate::read::batches()`]): memory holds one
    /// batch and the tiles it comes from, not the whole result.
    ///
    /// ```no_run
    /// # fn main() -> tiledb_runtime::error::Result<()> {
    /// # let array = tiledb_runtime::array::Array::open_path("a", Default::default())?;
    /// let mut total = 0i64;
    /// for batch in array.query().attributes(["a"]).batches(64 << 20)? {
    ///     total += batch?.values::<i32>("a")?.iter().map(|&v| i64::from(v)).sum::<i64>();
    /// }
    /// # Ok(()) }
    /// ```
    pub fn batches(self, budget: u64) -> Result<TypedBatches<'a>> {
        let snapshot = self.snapshot;
        let condition = self.condition.clone();
        let (query, enumerations, has_cells) = self.prepared()?;
        let mut batches =
            crate::read::conditioned::batches_where(snapshot, &query, condition.as_ref(), budget)?;
        if !has_cells {
            batches.finish();
        }
        Ok(TypedBatches {
            batches,
            enumerations,
            empty: empty_result(snapshot, &query),
        })
    }

    /// The query with a dense read's ranges filled in, the enumerations of
    /// the attributes read, and whether the read can have cells.
    fn prepared(self) -> Result<(ReadQuery, Enumerations, bool)> {
        let schema = self.snapshot.schema();
        let mut query = self.query;
        let names: Vec<String> = match &query.attributes {
            Some(names) => names.clone(),
            None => schema.attributes.iter().map(|a| a.name.clone()).collect(),
        };
        let mut enumerations = Vec::new();
        for name in &names {
            let (_, attribute) = schema.attribute(name).ok_or_else(|| {
                Error::Usage(format!("the array has no attribute named {name:?}"))
            })?;
            if let Some(e) = attribute
                .enumeration
                .as_ref()
                .and_then(|e| schema.enumeration(e))
            {
                enumerations.push((name.clone(), e.clone()));
            }
        }
        let has_cells = fill_dense_ranges(self.snapshot, &mut query);
        Ok((query, enumerations, has_cells))
    }
}

/// The enumerations of the attributes a read returns, by attribute name.
type Enumerations = Vec<(String, crate::schema::Enumeration)>;

/// A typed read in batches ([`QueryBuilder::batches`]): each item is the
/// next batch as a [`TypedResult`], or the error that ended the read.
#[derive(Debug)]
pub struct TypedBatches<'a> {
    batches: crate::read::BatchesWhere<'a>,
    enumerations: Enumerations,
    empty: ReadResult,
}

impl TypedBatches<'_> {
    /// A result with the read's fields and no cells (for a header or a
    /// schema when the read returns no batch).
    pub fn empty(&self) -> TypedResult {
        TypedResult {
            result: self.empty.clone(),
            enumerations: self.enumerations.clone(),
        }
    }
}

impl Iterator for TypedBatches<'_> {
    type Item = Result<TypedResult>;

    fn next(&mut self) -> Option<Result<TypedResult>> {
        let batch = self.batches.next()?;
        Some(batch.map(|result| TypedResult {
            result,
            enumerations: self.enumerations.clone(),
        }))
    }
}

/// Dense arrays: a dimension without ranges reads the array's non-empty
/// domain on it (what was written, as `tdb read` does), not the whole
/// domain. False when a dense array has no cells at all.
pub fn fill_dense_ranges(snapshot: &Snapshot, query: &mut ReadQuery) -> bool {
    let schema = snapshot.schema();
    if !schema.is_dense() {
        return true;
    }
    let Some(domain) = snapshot.non_empty_domain() else {
        return false;
    };
    query.ranges.resize(schema.dimensions.len(), Vec::new());
    for ((ranges, (lo, hi)), dim) in query.ranges.iter_mut().zip(&domain).zip(&schema.dimensions) {
        if ranges.is_empty() {
            let encode = |s| crate::read::encode_scalar(dim.datatype, s).unwrap_or_default();
            ranges.push((encode(lo), encode(hi)));
        }
    }
    true
}

/// A result without cells, with the fields `query` asks for.
pub fn empty_result(snapshot: &Snapshot, query: &ReadQuery) -> ReadResult {
    let schema = snapshot.schema();
    let dimensions = schema
        .dimensions
        .iter()
        .filter(|_| !query.skip_coordinates)
        .map(|d| Column::new(&d.name, d.datatype, (!d.var).then_some(1), false))
        .collect();
    let attribute = |name: &String| schema.attribute(name).map(|(_, a)| a);
    let attributes = match &query.attributes {
        Some(names) => names.iter().filter_map(attribute).collect(),
        None => schema.attributes.iter().collect::<Vec<_>>(),
    }
    .into_iter()
    .map(|a| Column::new(&a.name, a.datatype, a.cell_val_num, a.nullable))
    .collect();
    ReadResult {
        dimensions,
        attributes,
    }
}
