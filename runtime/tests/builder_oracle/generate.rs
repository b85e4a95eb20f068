//! Deterministic variety for the accepted-schema test: one recipe
//! (`[schema]` and write steps) per attribute datatype of the conformance
//! matrix (`conformance/cases/sparse.attr.<type>.toml` gives the attribute
//! and five values of it), each varied by its index: dense 1-D or 2-D with
//! row- or column-major orders and writes, sparse over an integer, a string
//! or a float and an integer dimension, Hilbert cells, duplicates, global
//! order writes, nullable, var-sized and multi-value cells, fill values,
//! filters with options on every pipeline, enumerations and a current
//! domain.

use toml::value::Table;
use toml::Value;

fn t(pairs: Vec<(&str, Value)>) -> Value {
    Value::Table(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<Table>(),
    )
}

fn s(x: &str) -> Value {
    Value::String(x.to_string())
}

fn i(x: i64) -> Value {
    Value::Integer(x)
}

fn a(items: Vec<Value>) -> Value {
    Value::Array(items)
}

fn filter(name: &str, options: Vec<(&str, Value)>) -> Value {
    let mut pairs = vec![("name", s(name))];
    pairs.extend(options);
    t(pairs)
}

/// The filters attribute `k` gets: a pipeline with options, chosen among
/// those TileDB accepts for the type.
fn attr_filters(k: usize, datatype: &str, var: bool) -> Value {
    let integer = matches!(
        datatype,
        "INT8" | "INT16" | "INT32" | "INT64" | "UINT8" | "UINT16" | "UINT32" | "UINT64"
    ) || datatype.starts_with("DATETIME")
        || datatype.starts_with("TIME");
    let string = matches!(datatype, "STRING_ASCII" | "STRING_UTF8") && var;
    let level = |l: i64| vec![("level", i(l))];
    let mut choices = vec![
        vec![],
        vec![filter("ZSTD", level(k as i64 % 9 + 1))],
        vec![filter("GZIP", level(6))],
        vec![filter("LZ4", vec![])],
        vec![filter("BZIP2", level(3))],
        vec![filter("CHECKSUM_SHA256", vec![]), filter("ZSTD", level(2))],
        vec![filter("BYTESHUFFLE", vec![]), filter("LZ4", vec![])],
        vec![filter("BITSHUFFLE", vec![]), filter("GZIP", level(1))],
        vec![filter("CHECKSUM_MD5", vec![])],
    ];
    if integer && !var {
        choices.push(vec![filter("DELTA", level(2))]);
        choices.push(vec![filter("DOUBLE_DELTA", vec![])]);
        choices.push(vec![
            filter("BIT_WIDTH_REDUCTION", vec![("max_window", i(64))]),
            filter("ZSTD", vec![]),
        ]);
        choices.push(vec![filter("XOR", vec![]), filter("ZSTD", level(4))]);
    }
    if string {
        choices.push(vec![filter("RLE", vec![])]);
        choices.push(vec![filter("DICTIONARY", vec![]), filter("ZSTD", vec![])]);
    }
    a(choices[(k * 7 + 3) % choices.len()].clone())
}

/// Five cells of `values` paired into two-value cells (`[v0, v1]`, …).
fn pairs(values: &[Value]) -> Vec<Value> {
    (0..values.len())
        .map(|j| {
            a(vec![
                values[j].clone(),
                values[(j + 1) % values.len()].clone(),
            ])
        })
        .collect()
}

/// The matrix attribute of `case` (its spec and five values).
fn matrix_attr(case: &Value) -> (Value, Vec<Value>) {
    let attr = case["schema"]["attrs"][0].clone();
    let values = case["steps"][0]["data"]["a"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    (attr, values)
}

/// One recipe being generated: the `[schema]` entries, the write step's
/// entries and its columns.
struct Parts {
    k: usize,
    schema: Vec<(&'static str, Value)>,
    step: Vec<(&'static str, Value)>,
    data: Vec<(&'static str, Value)>,
}

fn order(x: usize) -> Value {
    s(if x.is_multiple_of(2) {
        "row-major"
    } else {
        "col-major"
    })
}

/// The recipe of variant `k` for the matrix case `case`: `(schema, steps)`.
pub fn recipe(k: usize, case: &Value) -> (Value, Vec<Value>) {
    let mut parts = Parts {
        k,
        schema: Vec::new(),
        step: vec![("op", s("write")), ("timestamp", i(10))],
        data: Vec::new(),
    };
    let attrs = parts.attributes(case);
    if k.is_multiple_of(2) {
        parts.dense();
    } else {
        parts.sparse();
    }
    if k % 4 == 2 {
        parts.schema.push((
            "offsets_filters",
            a(vec![
                filter("POSITIVE_DELTA", vec![("max_window", i(512))]),
                filter("ZSTD", vec![]),
            ]),
        ));
        parts.schema.push((
            "validity_filters",
            a(vec![filter("GZIP", vec![("level", i(9))])]),
        ));
    }
    parts.schema.push(("attrs", a(attrs)));
    let Parts {
        schema,
        mut step,
        data,
        ..
    } = parts;
    step.push(("data", t(data)));
    (t(schema), vec![t(step)])
}

impl Parts {
    /// The attribute `a` of the matrix case, varied, and maybe an
    /// enumerated attribute `e`; their columns.
    fn attributes(&mut self, case: &Value) -> Vec<Value> {
        let k = self.k;
        let (mut attr, mut values) = matrix_attr(case);
        let datatype = attr["type"].as_str().unwrap_or("INT32").to_string();
        let var = attr.get("cell_val_num").and_then(Value::as_str) == Some("var");
        let table = attr.as_table_mut().expect("an attribute table");
        let fixed_numeric = !var
            && !matches!(
                datatype.as_str(),
                "CHAR" | "BLOB" | "GEOM_WKB" | "GEOM_WKT" | "STRING_ASCII" | "STRING_UTF8"
            );
        if fixed_numeric && k % 4 == 3 {
            table.insert("cell_val_num".into(), i(2));
            values = pairs(&values);
        }
        let nullable = k.is_multiple_of(3);
        if nullable {
            table.insert("nullable".into(), Value::Boolean(true));
        } else if k % 5 == 2 {
            table.insert("fill".into(), values[2].clone());
        }
        table.insert("filters".into(), attr_filters(k, &datatype, var));
        let mut attrs = vec![attr];
        self.data.push(("a", a(values.clone())));
        if k % 8 == 5 {
            // An enumeration of strings indexed by a UINT8 attribute.
            attrs.push(t(vec![
                ("name", s("e")),
                ("type", s("UINT8")),
                ("enumeration", s("colors")),
            ]));
            self.schema.push((
                "enumerations",
                a(vec![t(vec![
                    ("name", s("colors")),
                    ("type", s("STRING_UTF8")),
                    ("cell_val_num", s("var")),
                    ("ordered", Value::Boolean(k.is_multiple_of(2))),
                    ("values", a(vec![s("red"), s("green"), s("blue")])),
                ])]),
            ));
            self.data.push(("e", a(vec![i(0), i(2), i(1), i(0), i(1)])));
        }
        if nullable {
            self.step.push((
                "validity",
                t(vec![("a", a(vec![i(1), i(0), i(1), i(1), i(0)]))]),
            ));
        }
        attrs
    }

    /// Dense: 1-D or 2-D, row- or column-major tiles, cells and write.
    fn dense(&mut self) {
        let k = self.k;
        self.schema.push(("type", s("dense")));
        self.schema.push(("tile_order", order(k / 2)));
        self.schema.push(("cell_order", order(k / 4)));
        let layout = order(k / 6);
        if k.is_multiple_of(4) {
            self.schema.push((
                "dims",
                a(vec![
                    t(vec![
                        ("name", s("r")),
                        ("type", s("INT32")),
                        ("domain", a(vec![i(0), i(9)])),
                        ("tile", i(3)),
                    ]),
                    t(vec![
                        ("name", s("c")),
                        ("type", s("INT32")),
                        ("domain", a(vec![i(0), i(9)])),
                        ("tile", i(4)),
                    ]),
                ]),
            ));
            self.step.push((
                "subarray",
                a(vec![a(vec![i(2), i(2)]), a(vec![i(3), i(7)])]),
            ));
        } else {
            self.schema.push((
                "dims",
                a(vec![t(vec![
                    ("name", s("d")),
                    ("type", s("INT64")),
                    ("domain", a(vec![i(0), i(99)])),
                    ("tile", i(k as i64 % 7 + 2)),
                ])]),
            ));
            self.step.push(("subarray", a(vec![a(vec![i(40), i(44)])])));
            if k % 10 == 6 {
                self.schema
                    .push(("current_domain", a(vec![a(vec![i(0), i(49)])])));
            }
        }
        self.step.push(("layout", layout));
    }

    /// Sparse: an integer, a string, or a float and an integer dimension;
    /// Hilbert cells, duplicates, a global-order write.
    fn sparse(&mut self) {
        let k = self.k;
        self.schema.push(("type", s("sparse")));
        self.schema.push(("capacity", i(k as i64 % 5 + 2)));
        let hilbert = k % 4 == 1;
        if hilbert {
            self.schema.push(("cell_order", s("hilbert")));
        } else {
            self.schema.push(("cell_order", order(k / 2)));
            self.schema.push(("tile_order", order(k / 4)));
        }
        let dups = k % 6 == 3;
        self.schema
            .push(("allows_duplicates", Value::Boolean(dups)));
        let coords = match (k / 2) % 3 {
            0 => {
                self.schema.push((
                    "dims",
                    a(vec![t(vec![
                        ("name", s("d")),
                        ("type", s("INT32")),
                        ("domain", a(vec![i(0), i(999)])),
                        ("tile", i(100)),
                    ])]),
                ));
                self.schema.push((
                    "coords_filters",
                    a(vec![
                        filter("DOUBLE_DELTA", vec![]),
                        filter("ZSTD", vec![("level", i(3))]),
                    ]),
                ));
                if k % 7 == 3 {
                    self.schema
                        .push(("current_domain", a(vec![a(vec![i(0), i(999)])])));
                }
                if !hilbert && !dups && k % 3 == 1 {
                    // Global order: tile-major, then row- or column-major cells (one dimension).
                    self.step.push(("layout", s("global")));
                    let perm = [4, 1, 0, 2, 3];
                    let sorted = [0, 1, 3, 500, 999];
                    self.data = std::mem::take(&mut self.data)
                        .into_iter()
                        .map(|(n, v)| {
                            (
                                n,
                                a(perm
                                    .iter()
                                    .map(|&p| v.as_array().unwrap()[p].clone())
                                    .collect()),
                            )
                        })
                        .collect();
                    if let Some(validity) = self.step.iter_mut().find(|(n, _)| *n == "validity") {
                        validity.1 = t(vec![(
                            "a",
                            a(perm.iter().map(|&p| i([1, 0, 1, 1, 0][p])).collect()),
                        )]);
                    }
                    vec![("d", a(sorted.iter().map(|&c| i(c)).collect()))]
                } else {
                    vec![(
                        "d",
                        a(vec![
                            i(3),
                            i(1),
                            i(500),
                            i(999),
                            if dups { i(3) } else { i(0) },
                        ]),
                    )]
                }
            }
            1 => {
                self.schema.push((
                    "dims",
                    a(vec![t(vec![
                        ("name", s("s")),
                        ("type", s("STRING_ASCII")),
                        ("filters", a(vec![filter("RLE", vec![])])),
                    ])]),
                ));
                vec![(
                    "s",
                    a(vec![
                        s("c"),
                        s("a"),
                        s("zz"),
                        s("b"),
                        if dups { s("c") } else { s("aa") },
                    ]),
                )]
            }
            _ => {
                self.schema.push((
                    "dims",
                    a(vec![
                        t(vec![
                            ("name", s("x")),
                            ("type", s("FLOAT64")),
                            ("domain", a(vec![Value::Float(-1.0), Value::Float(1.0)])),
                        ]),
                        t(vec![
                            ("name", s("y")),
                            ("type", s("UINT8")),
                            ("domain", a(vec![i(0), i(9)])),
                            ("tile", i(3)),
                        ]),
                    ]),
                ));
                vec![
                    (
                        "x",
                        a(vec![
                            Value::Float(0.5),
                            Value::Float(-1.0),
                            Value::Float(0.25),
                            Value::Float(1.0),
                            Value::Float(0.5),
                        ]),
                    ),
                    (
                        "y",
                        a(vec![i(1), i(9), i(0), i(4), if dups { i(1) } else { i(2) }]),
                    ),
                ]
            }
        };
        self.step.push(("coords", t(coords)));
    }
}
