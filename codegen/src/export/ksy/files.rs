//! Whole files: the file-kind `.ksy`s, the fragment metadata `.ksy` and
//! `UNSUPPORTED.md`.

use super::yaml::{s, write_yaml, Y};
use super::*;

impl Ctx<'_> {
    /// Every supported struct reachable from `roots`, and every enum, as Kaitai types.
    pub(super) fn types_for(&self, roots: &[&str]) -> (Entries, Entries) {
        let mut seen: Vec<String> = Vec::new();
        let mut stack: Vec<String> = roots.iter().map(std::string::ToString::to_string).collect();
        while let Some(name) = stack.pop() {
            if seen.contains(&name) || self.unsupported.contains_key(&name) {
                continue;
            }
            let Some(st) = self.table.structs.get(&name) else {
                continue;
            };
            seen.push(name.clone());
            for field in &st.fields {
                stack.extend(field.arg_targets().into_iter().cloned());
            }
        }
        seen.sort();
        let types = seen
            .iter()
            .filter_map(|name| {
                let st = &self.table.structs[name];
                self.render_struct(st).ok().map(|y| (snake(name), y))
            })
            .collect();
        let enums = self
            .table
            .enums
            .values()
            .map(|e| (snake(&e.name), self.render_enum(e)))
            .collect();
        (types, enums)
    }

    pub(super) fn meta(&self, id: &str, title: &str) -> Y {
        Y::Map(vec![
            ("id".into(), s(id)),
            ("title".into(), s(title)),
            ("file-extension".into(), s("tdb")),
            ("endian".into(), s("le")),
            (
                "xref".into(),
                Y::Map(vec![(
                    "tiledb-format".into(),
                    s(format!("format version {}", self.spec.current)),
                )]),
            ),
        ])
    }

    /// The shared types of every generic-tile kind: header with pipeline, chunk framing.
    pub(super) fn generic_tile_types(&self, payload: Option<&str>) -> Vec<(String, Y)> {
        let chunk_seq = |payload_field: Y| {
            Y::List(vec![
                Y::Map(vec![("id".into(), s("orig_len")), ("type".into(), s("u4"))]),
                Y::Map(vec![
                    ("id".into(), s("filtered_len")),
                    ("type".into(), s("u4")),
                ]),
                Y::Map(vec![("id".into(), s("md_len")), ("type".into(), s("u4"))]),
                payload_field,
            ])
        };
        let mut types = Vec::new();
        if let Some(payload) = payload {
            // GZIP-only pipeline: the chunk metadata, then one zlib stream.
            types.push((
                "gzip_chunk".to_string(),
                Y::Map(vec![
                    ("doc".into(), s("The single chunk of a generic tile whose pipeline is GZIP alone: the compressor's part table, then one zlib stream that inflates to the payload.")),
                    (
                        "seq".into(),
                        match chunk_seq(Y::Map(vec![
                            ("id".into(), s("metadata")),
                            ("type".into(), s("compression_chunk_metadata")),
                            ("size".into(), s("md_len")),
                        ])) {
                            Y::List(mut items) => {
                                items.push(Y::Map(vec![
                                    ("id".into(), s("payload")),
                                    ("size".into(), s("filtered_len")),
                                    ("process".into(), s("zlib")),
                                    ("type".into(), s(payload)),
                                    ("if".into(), s("metadata.n_md_parts == 0 and metadata.n_data_parts == 1")),
                                ]));
                                items.push(Y::Map(vec![
                                    ("id".into(), s("data")),
                                    ("size".into(), s("filtered_len")),
                                    ("if".into(), s("not (metadata.n_md_parts == 0 and metadata.n_data_parts == 1)")),
                                ]));
                                Y::List(items)
                            }
                            other => other,
                        },
                    ),
                ]),
            ));
            types.push((
                "plain_chunk".to_string(),
                Y::Map(vec![
                    ("doc".into(), s("The single chunk of a generic tile with an empty pipeline: the payload as is.")),
                    (
                        "seq".into(),
                        match chunk_seq(Y::Map(vec![("id".into(), s("metadata")), ("size".into(), s("md_len"))])) {
                            Y::List(mut items) => {
                                items.push(Y::Map(vec![
                                    ("id".into(), s("payload")),
                                    ("size".into(), s("filtered_len")),
                                    ("type".into(), s(payload)),
                                ]));
                                Y::List(items)
                            }
                            other => other,
                        },
                    ),
                ]),
            ));
        }
        types
    }

    /// The `.ksy` of a generic-tile file kind whose payload is `st`.
    pub(super) fn render_kind(&self, st: &Struct) -> String {
        let payload = snake(&st.name);
        let id = format!("tiledb_{payload}");
        let mut roots = vec!["GenericTileHeader", "TileChunk", "CompressionChunkMetadata"];
        roots.push(&st.name);
        let (mut types, enums) = self.types_for(&roots);
        types.extend(self.generic_tile_types(Some(&payload)));
        types.sort_by(|a, b| a.0.cmp(&b.0));
        let single = "n_chunks == 1";
        let root = Y::Map(vec![
            ("meta".into(), self.meta(&id, &format!("TileDB {} (generic tile)", st.name))),
            (
                "doc".into(),
                s(format!(
                    "{}\n\nA generic tile: the header, then the filtered tile. The payload is parsed through when the tile has one chunk and its pipeline is empty or GZIP alone (what TileDB writes without encryption); otherwise `chunks` holds the framing and the payload stays filtered.",
                    st.doc.clone().unwrap_or_default()
                )),
            ),
            (
                "seq".into(),
                Y::List(vec![
                    Y::Map(vec![("id".into(), s("header")), ("type".into(), s("generic_tile_header"))]),
                    Y::Map(vec![("id".into(), s("n_chunks")), ("type".into(), s("u8"))]),
                    Y::Map(vec![
                        ("id".into(), s("gzip_chunk")),
                        ("type".into(), s("gzip_chunk")),
                        ("if".into(), s(format!("is_gzip and {single}"))),
                    ]),
                    Y::Map(vec![
                        ("id".into(), s("plain_chunk")),
                        ("type".into(), s("plain_chunk")),
                        ("if".into(), s(format!("is_plain and {single}"))),
                    ]),
                    Y::Map(vec![
                        ("id".into(), s("chunks")),
                        ("type".into(), s("tile_chunk")),
                        ("repeat".into(), s("expr")),
                        ("repeat-expr".into(), s("n_chunks")),
                        ("if".into(), s(format!("not ((is_gzip or is_plain) and {single})"))),
                    ]),
                ]),
            ),
            (
                "instances".into(),
                Y::Map(vec![
                    (
                        "is_plain".into(),
                        Y::Map(vec![("value".into(), s("header.pipeline.n_filters == 0"))]),
                    ),
                    (
                        "is_gzip".into(),
                        Y::Map(vec![(
                            "value".into(),
                            s("header.pipeline.n_filters == 1 and header.pipeline.filters[0].filter_type == filter_type::gzip"),
                        )]),
                    ),
                ]),
            ),
            ("types".into(), Y::Map(types)),
            ("enums".into(), Y::Map(enums)),
        ]);
        let mut out = format!(
            "# @generated by tiledb-codegen --emit ksy from spec/ — do not edit.\n# The payload `{}` of a generic tile.\n",
            st.name
        );
        write_yaml(&mut out, &root, 0);
        out
    }

    /// `tiledb_fragment_metadata.ksy`: what needs no schema.
    pub(super) fn render_fragment_metadata(&self) -> Option<String> {
        if self.unsupported.contains_key("FragmentFooterHead") {
            return None;
        }
        let roots = ["GenericTileHeader", "TileChunk", "FragmentFooterHead"];
        let (mut types, enums) = self.types_for(&roots);
        types.push((
            "generic_tile".into(),
            Y::Map(vec![
                (
                    "doc".into(),
                    s("One generic tile: its header and filtered tile (payload left filtered)."),
                ),
                (
                    "seq".into(),
                    Y::List(vec![
                        Y::Map(vec![
                            ("id".into(), s("header")),
                            ("type".into(), s("generic_tile_header")),
                        ]),
                        Y::Map(vec![("id".into(), s("n_chunks")), ("type".into(), s("u8"))]),
                        Y::Map(vec![
                            ("id".into(), s("chunks")),
                            ("type".into(), s("tile_chunk")),
                            ("repeat".into(), s("expr")),
                            ("repeat-expr".into(), s("n_chunks")),
                        ]),
                    ]),
                ),
            ]),
        ));
        types.push((
            "generic_tiles".into(),
            Y::Map(vec![(
                "seq".into(),
                Y::List(vec![Y::Map(vec![
                    ("id".into(), s("tiles")),
                    ("type".into(), s("generic_tile")),
                    ("repeat".into(), s("eos")),
                ])]),
            )]),
        ));
        types.sort_by(|a, b| a.0.cmp(&b.0));
        let root = Y::Map(vec![
            ("meta".into(), self.meta("tiledb_fragment_metadata", "TileDB fragment metadata (__fragment_metadata.tdb), format version 10 and later")),
            (
                "doc".into(),
                s("A fragment metadata file from format version 10 on: generic tiles (R-tree, tile offsets, sizes, mins, maxes, sums, null counts, ...), then the footer, then the footer's length (u64). The payloads of the tiles and the footer past its first fields need the array schema (another file); see UNSUPPORTED.md."),
            ),
            (
                "instances".into(),
                Y::Map(vec![
                    (
                        "footer_len".into(),
                        Y::Map(vec![("pos".into(), s("_io.size - 8")), ("type".into(), s("u8"))]),
                    ),
                    (
                        "footer_start".into(),
                        Y::Map(vec![("value".into(), s("_io.size - 8 - footer_len"))]),
                    ),
                    (
                        "tiles".into(),
                        Y::Map(vec![
                            ("pos".into(), s("0")),
                            ("size".into(), s("footer_start")),
                            ("type".into(), s("generic_tiles")),
                        ]),
                    ),
                    (
                        "footer_head".into(),
                        Y::Map(vec![
                            ("pos".into(), s("footer_start")),
                            ("type".into(), s("fragment_footer_head")),
                        ]),
                    ),
                ]),
            ),
            ("types".into(), Y::Map(types)),
            ("enums".into(), Y::Map(enums)),
        ]);
        let mut out =
            "# @generated by tiledb-codegen --emit ksy from spec/ — do not edit.\n".to_string();
        write_yaml(&mut out, &root, 0);
        Some(out)
    }

    pub(super) fn render_unsupported(&self, kinds: &[String]) -> String {
        let mut out = String::from(
            "# What the Kaitai Struct export cannot express\n\n\
             Generated by `cargo run -p tiledb-codegen -- --emit ksy DIR`; do not edit.\n\n\
             ## File kinds written\n\n",
        );
        for kind in kinds {
            let _ = writeln!(out, "- `{kind}`");
        }
        out.push_str(
            "\n## Generic tiles\n\n\
             Every `.ksy` of a generic-tile kind parses the header and the chunk framing of any tile. \
             The payload is parsed through only when the tile has one chunk and its pipeline is empty \
             or GZIP alone (`process: zlib`), which is what TileDB writes for unencrypted metadata \
             below 64 KiB. Otherwise (several chunks, AES-256-GCM encryption, another compressor) \
             the chunks stay as filtered bytes: Kaitai cannot concatenate the unfiltered chunks into \
             one stream, and has no AES-GCM or zstd/lz4/bzip2 process.\n\n\
             ## Fragment metadata\n\n\
             `tiledb_fragment_metadata.ksy` reads the footer length (last 8 bytes, always present from \
             format version 10), the generic tiles before the footer (header and framing) and the \
             footer's first fields (`FragmentFooterHead`). Which tile holds what, and the rest of the \
             footer, follow from the array schema of the fragment, which is in another file.\n\n\
             ## Files that are not binary layouts\n\n\
             The commit markers (`.wrt`, `.ok`) are empty files, and `.con`, `.ign` and `.vac` are \
             text (spec/text_files.toml): there is nothing for Kaitai to parse.\n\n\
             ## Structures Kaitai cannot express\n\n| structure | why |\n| --- | --- |\n",
        );
        for (name, why) in &self.unsupported {
            let _ = writeln!(out, "| `{name}` | {} |", why.replace('|', "\\|"));
        }
        let skipped: Vec<&String> = self
            .table
            .structs
            .values()
            .filter(|st| {
                st.container.as_deref() == Some("generic_tile")
                    && !st.params.is_empty()
                    && !self.unsupported.contains_key(&st.name)
            })
            .map(|st| &st.name)
            .collect();
        if !skipped.is_empty() {
            out.push_str("\n## Generic-tile payloads without a file kind of their own\n\nThese payloads are types of the `.ksy` files that use them but take params from the schema or footer, so no file parses them alone:\n\n");
            for name in skipped {
                let _ = writeln!(out, "- `{name}`");
            }
        }
        out
    }
}
