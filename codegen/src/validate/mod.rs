//! Stage 2: takes the raw TOML (`crate::raw`) and gives the typed,
//! validated [`crate::model`], rejecting every inconsistency with an error
//! that names the file and the key.
//!
//! It runs in passes because an expression may name any type of any file:
//! names are declared first, then enums and contexts, then struct shells
//! (layouts and roles, expressions parsed but unchecked), then the checks
//! across structs, and only then are the expressions type-checked
//! (`exprs`) into the model.

mod enums;
mod exprs;
mod gates;
mod names;

pub(crate) use names::folder_name;
mod sizes;
mod structs;
mod views;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::error::{SpecError, SpecErrorKind};
use crate::expr::check::parse;
use crate::expr::rust_ident;
use crate::model::*;
use crate::raw::*;

/// An expression parsed from its text but not yet checked: the state of
/// every expression between the struct shells and the expression pass.
#[derive(Debug, Clone)]
pub(crate) struct Parsed {
    pub text: String,
    pub syn: syn::Expr,
}

/// The file the errors of a pass are reported in.
struct Ctx<'a> {
    file: &'a str,
}

impl Ctx<'_> {
    fn err(&self, path: impl Into<String>, kind: SpecErrorKind) -> SpecError {
        SpecError {
            file: self.file.to_string(),
            path: path.into(),
            kind,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Enum,
    Context,
    Struct,
}

/// Every declared type name, with the file that declares it and its kind.
type Declared = BTreeMap<String, (String, Kind)>;

#[derive(Debug, Clone, Copy)]
struct GateRange {
    oldest: u32,
    newest: u32,
}

/// One spec file between the passes.
struct FileShell {
    display: String,
    stem: String,
    raw: RawFile,
    enums: Vec<Enum>,
    contexts: Vec<Context<Parsed>>,
    structs: Vec<Struct<Parsed>>,
    folders: Vec<Folder>,
    file_names: Vec<FileName>,
    extensions: Vec<NameExtension>,
}

/// Names the generated code uses for itself (the switch value passed to a
/// switch's enum, the sink a `size_of` is measured with).
const RESERVED: &[&str] = &["switch_selector", "size_sink"];

/// Reads and validates every `*.toml` in `spec_dir`.
pub fn load(spec_dir: &Path) -> Result<(Spec, TypeTable), SpecError> {
    let names = spec_file_names(spec_dir)?;
    let read = |name: &str| -> Result<String, SpecError> {
        std::fs::read_to_string(spec_dir.join(name)).map_err(|e| SpecError {
            file: format!("spec/{name}"),
            path: String::new(),
            kind: SpecErrorKind::Io(e.to_string()),
        })
    };
    let raw_format = load_format(&names, &read)?;
    let mut shells = Vec::new();
    for name in names.iter().filter(|n| *n != "format.toml") {
        let display = format!("spec/{name}");
        let raw: RawFile = toml::from_str(&read(name)?).map_err(|e| SpecError {
            file: display.clone(),
            path: String::new(),
            kind: SpecErrorKind::Syntax(syntax_message(&e)),
        })?;
        shells.push(FileShell {
            display,
            stem: name.trim_end_matches(".toml").to_string(),
            raw,
            enums: Vec::new(),
            contexts: Vec::new(),
            structs: Vec::new(),
            folders: Vec::new(),
            file_names: Vec::new(),
            extensions: Vec::new(),
        });
    }
    let gates = GateRange {
        oldest: raw_format.oldest,
        newest: raw_format.current + 1,
    };
    let declared = declare_names(&raw_format, &shells)?;
    build_directory(&mut shells, gates)?;

    let mut table: TypeTable<Parsed> = TypeTable {
        gates: (
            raw_format.file.module.clone(),
            raw_format.gates.iter().map(|g| g.name.clone()).collect(),
        ),
        ..TypeTable::default()
    };
    for shell in &mut shells {
        let ctx = Ctx {
            file: &shell.display,
        };
        for raw_enum in &shell.raw.enums {
            let built = enums::build_enum(&ctx, raw_enum, gates, &declared)?;
            table.enums.insert(built.name.clone(), built.clone());
            shell.enums.push(built);
        }
        for raw_context in &shell.raw.contexts {
            let built = build_context(&ctx, raw_context, &declared)?;
            table.contexts.insert(built.name.clone(), built.clone());
            shell.contexts.push(built);
        }
    }
    for shell in &mut shells {
        let ctx = Ctx {
            file: &shell.display,
        };
        for raw_struct in &shell.raw.structs {
            let built = structs::build_struct(&ctx, raw_struct, &declared, gates)?;
            table.structs.insert(built.name.clone(), built.clone());
            shell.structs.push(built);
        }
    }
    structs::check_across(&shells, &table)?;
    for shell in &shells {
        let ctx = Ctx {
            file: &shell.display,
        };
        for spec_enum in &shell.enums {
            enums::check_struct_properties(&ctx, spec_enum, &table.structs)?;
        }
    }
    sizes::check_fixed_sizes(&shells, &table)?;
    let (mut files, mut checked_table) = exprs::check_files(shells, &table)?;
    views::plan_views(&mut files, &mut checked_table)?;

    let spec = Spec {
        current: raw_format.current,
        oldest: raw_format.oldest,
        reads: raw_format.reads,
        writes: raw_format.writes,
        format_title: raw_format.file.title.clone(),
        format_module: raw_format.file.module.clone(),
        format_source: raw_format.file.source.clone(),
        versions: raw_format
            .versions
            .iter()
            .map(|v| Version {
                number: v.number,
                release: v.release.clone(),
                source: v.source.clone(),
                erratum: v.erratum.clone(),
                changes: v.changes.clone(),
            })
            .collect(),
        upstream: Upstream {
            repository: raw_format.upstream.repository.clone(),
            format_spec_commit: raw_format.upstream.format_spec_commit.clone(),
            format_spec_date: raw_format.upstream.format_spec_date.clone(),
            release_tag: raw_format.upstream.release_tag.clone(),
            release_commit: raw_format.upstream.release_commit.clone(),
            doc: raw_format.upstream.doc.clone(),
        },
        facts: raw_format
            .facts
            .iter()
            .map(|f| Fact {
                name: f.name.clone(),
                erratum: f.kind == "erratum",
                statement: f.statement.clone(),
                source: f.source.clone(),
                upstream: f.upstream.clone(),
                value: f.value,
            })
            .collect(),
        gates: raw_format
            .gates
            .iter()
            .map(|g| Gate {
                name: g.name.clone(),
                since: g.since,
                until: g.until,
                doc: g.doc.clone(),
                source: g.source.clone(),
            })
            .collect(),
        files,
    };
    Ok((spec, checked_table))
}

/// The `*.toml` files of `spec_dir`, sorted.
fn spec_file_names(spec_dir: &Path) -> Result<Vec<String>, SpecError> {
    let mut names: Vec<String> = std::fs::read_dir(spec_dir)
        .map_err(|e| SpecError {
            file: spec_dir.display().to_string(),
            path: String::new(),
            kind: SpecErrorKind::Io(e.to_string()),
        })?
        .filter_map(std::result::Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".toml"))
        .collect();
    names.sort();
    Ok(names)
}

/// Reads `format.toml` and checks its versions.
fn load_format(
    names: &[String],
    read: &dyn Fn(&str) -> Result<String, SpecError>,
) -> Result<RawFormat, SpecError> {
    let format_display = "spec/format.toml".to_string();
    if !names.iter().any(|n| n == "format.toml") {
        return Err(SpecError {
            file: format_display,
            path: String::new(),
            kind: SpecErrorKind::Io("format.toml is missing".into()),
        });
    }
    let raw_format: RawFormat = toml::from_str(&read("format.toml")?).map_err(|e| SpecError {
        file: format_display.clone(),
        path: String::new(),
        kind: SpecErrorKind::Syntax(syntax_message(&e)),
    })?;
    let format_ctx = Ctx {
        file: &format_display,
    };
    if raw_format.oldest > raw_format.current {
        return Err(format_ctx.err(
            "",
            SpecErrorKind::Invalid(format!(
                "oldest = {} is above current = {}",
                raw_format.oldest, raw_format.current
            )),
        ));
    }
    // What the implementation supports is stated, never implied by `current`.
    for (key, value, low, high) in [
        (
            "reads",
            raw_format.reads,
            raw_format.oldest,
            raw_format.current,
        ),
        (
            "writes",
            raw_format.writes,
            raw_format.oldest,
            raw_format.reads,
        ),
    ] {
        if value < low || value > high {
            return Err(format_ctx.err(
                key,
                SpecErrorKind::Invalid(format!(
                    "{key} = {value} is outside {low}..={high} (oldest..={})",
                    if key == "reads" { "current" } else { "reads" }
                )),
            ));
        }
    }
    let upstream = &raw_format.upstream;
    for (key, commit) in [
        ("upstream.format_spec_commit", &upstream.format_spec_commit),
        ("upstream.release_commit", &upstream.release_commit),
    ] {
        if commit.len() != 40 || !commit.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format_ctx.err(
                key,
                SpecErrorKind::Invalid(format!("\"{commit}\" is not a full 40-digit commit id")),
            ));
        }
    }
    gates::check_behaviour_gates(&format_ctx, &raw_format)?;
    let mut seen_facts = BTreeSet::new();
    for fact in &raw_format.facts {
        let path = format!("fact {}", fact.name);
        if !is_snake(&fact.name) {
            return Err(format_ctx.err(
                path,
                SpecErrorKind::Invalid(format!("\"{}\" is not a snake_case name", fact.name)),
            ));
        }
        if !seen_facts.insert(fact.name.clone()) {
            return Err(format_ctx.err(
                path,
                SpecErrorKind::DuplicateName {
                    what: "fact".into(),
                    name: fact.name.clone(),
                },
            ));
        }
        if fact.kind != "erratum" && fact.kind != "missing" {
            return Err(format_ctx.err(
                path,
                SpecErrorKind::Invalid(format!(
                    "kind = \"{}\": a fact is an \"erratum\" (upstream is wrong) or \"missing\" (upstream says nothing)",
                    fact.kind
                )),
            ));
        }
    }
    let mut seen_versions = BTreeSet::new();
    for version in &raw_format.versions {
        if !seen_versions.insert(version.number) {
            return Err(format_ctx.err(
                format!("version {}", version.number),
                SpecErrorKind::DuplicateName {
                    what: "version".into(),
                    name: version.number.to_string(),
                },
            ));
        }
    }
    // Every version from the oldest to `current` says what it changed, so
    // raising `current` without a history entry cannot go unnoticed.
    for version in raw_format.oldest..=raw_format.current {
        if !seen_versions.contains(&version) {
            let key = if version == raw_format.current {
                "current"
            } else {
                "version"
            };
            return Err(format_ctx.err(key, SpecErrorKind::MissingVersionEntry { key, version }));
        }
    }
    if let Some(above) = seen_versions.range(raw_format.current + 1..).next() {
        return Err(format_ctx.err(
            format!("version {above}"),
            SpecErrorKind::Invalid(format!(
                "a history entry above current = {}",
                raw_format.current
            )),
        ));
    }
    Ok(raw_format)
}

/// Every type name, once across all files; modules likewise.
fn declare_names(raw_format: &RawFormat, shells: &[FileShell]) -> Result<Declared, SpecError> {
    let mut declared: Declared = BTreeMap::new();
    let mut modules: BTreeMap<String, String> = BTreeMap::new();
    modules.insert(raw_format.file.module.clone(), "spec/format.toml".into());
    for shell in shells {
        let (display, raw) = (&shell.display, &shell.raw);
        let ctx = Ctx { file: display };
        if let Some(previous) = modules.insert(raw.file.module.clone(), display.clone()) {
            return Err(ctx.err(
                "file",
                SpecErrorKind::Invalid(format!(
                    "module \"{}\" is already generated from {previous}",
                    raw.file.module
                )),
            ));
        }
        if !is_snake(&raw.file.module) {
            return Err(ctx.err(
                "file",
                SpecErrorKind::Invalid(format!(
                    "module \"{}\" is not a snake_case name",
                    raw.file.module
                )),
            ));
        }
        let all = raw
            .enums
            .iter()
            .map(|e| (&e.name, Kind::Enum, "enum"))
            .chain(
                raw.contexts
                    .iter()
                    .map(|c| (&c.name, Kind::Context, "context")),
            )
            .chain(
                raw.structs
                    .iter()
                    .map(|s| (&s.name, Kind::Struct, "struct")),
            );
        for (name, kind, what) in all {
            let path = format!("{what} {name}");
            if !is_upper_camel(name) {
                return Err(ctx.err(
                    path,
                    SpecErrorKind::Invalid(format!("\"{name}\" is not an UpperCamelCase name")),
                ));
            }
            if declared
                .insert(name.clone(), (display.clone(), kind))
                .is_some()
            {
                return Err(ctx.err(
                    path,
                    SpecErrorKind::DuplicateName {
                        what: "type".into(),
                        name: name.clone(),
                    },
                ));
            }
        }
    }
    Ok(declared)
}

/// A context with its field types resolved; the values of a derived
/// context are parsed here and checked with the structs' expressions.
fn build_context(
    ctx: &Ctx,
    raw_context: &RawContext,
    declared: &Declared,
) -> Result<Context<Parsed>, SpecError> {
    let path = format!("context {}", raw_context.name);
    let mut fields = Vec::new();
    let mut seen = BTreeSet::new();
    for field in &raw_context.fields {
        let fpath = format!("{path}, field {}", field.name);
        if !seen.insert(field.name.clone()) {
            return Err(ctx.err(
                fpath,
                SpecErrorKind::DuplicateName {
                    what: "field".into(),
                    name: field.name.clone(),
                },
            ));
        }
        let ty = resolve_ty(&field.ty, declared).map_err(|k| ctx.err(&fpath, k))?;
        let value = match (&raw_context.from, &field.value) {
            (Some(_), Some(text)) => Some(parse_expr(
                ctx,
                &fpath,
                "value",
                &RawExpr::Text(text.clone()),
            )?),
            (Some(from), None) => {
                return Err(ctx.err(
                    fpath,
                    SpecErrorKind::Invalid(format!(
                        "the context is computed from {from}, so every field needs a value"
                    )),
                ))
            }
            (None, Some(_)) => {
                return Err(ctx.err(
                    fpath,
                    SpecErrorKind::Invalid(
                        "value needs the context to be declared `from` a struct".into(),
                    ),
                ))
            }
            (None, None) => None,
        };
        fields.push(Named {
            name: field.name.clone(),
            ident: rust_ident(&field.name),
            ty,
            doc: field.doc.clone(),
            value,
        });
    }
    if let Some(from) = &raw_context.from {
        if !matches!(declared.get(from), Some((_, Kind::Struct))) {
            return Err(ctx.err(
                format!("{path}, from"),
                SpecErrorKind::UnknownType(from.clone()),
            ));
        }
    }
    Ok(Context {
        name: raw_context.name.clone(),
        unused_reason: raw_context.unused_reason.clone(),
        doc: raw_context.doc.clone(),
        source: raw_context.source.clone(),
        from: raw_context.from.clone(),
        fields,
    })
}

/// The folder table and the names of `directory.toml` (one file holds
/// them all), built into its shell.
fn build_directory(shells: &mut [FileShell], gates: GateRange) -> Result<(), SpecError> {
    let mut folder_file: Option<String> = None;
    for shell in shells.iter_mut() {
        if shell.raw.folders.is_empty() {
            if !shell.raw.file_names.is_empty() || !shell.raw.extensions.is_empty() {
                let ctx = Ctx {
                    file: &shell.display,
                };
                let message = "file names and extensions go with the folders".into();
                return Err(ctx.err("file_name", SpecErrorKind::Invalid(message)));
            }
            continue;
        }
        let ctx = Ctx {
            file: &shell.display,
        };
        if let Some(first) = &folder_file {
            return Err(ctx.err(
                "folder",
                SpecErrorKind::Invalid(format!("folders are already declared in {first}")),
            ));
        }
        folder_file = Some(shell.display.clone());
        shell.folders = build_folders(&ctx, &shell.raw.folders, gates)?;
        shell.file_names =
            names::build_file_names(&ctx, &shell.raw.file_names, &shell.folders, gates)?;
        shell.extensions =
            names::build_extensions(&ctx, &shell.raw.extensions, &shell.folders, gates)?;
    }
    Ok(())
}

/// The folder table: each path once per kind of object; a folder listed
/// whole says what TileDB loads its files as and what fails beside an
/// unexpected one, any other says neither.
fn build_folders(ctx: &Ctx, raw: &[RawFolder], gates: GateRange) -> Result<Vec<Folder>, SpecError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for folder in raw {
        let path = format!("folder {:?}", folder.path);
        let mut in_array = false;
        let mut in_group = false;
        for object in &folder.objects {
            match object.as_str() {
                "array" => in_array = true,
                "group" => in_group = true,
                other => {
                    return Err(ctx.err(
                        path,
                        SpecErrorKind::Invalid(format!(
                            "in: \"{other}\" is neither \"array\" nor \"group\""
                        )),
                    ))
                }
            }
            if !seen.insert((object.clone(), folder.path.clone())) {
                return Err(ctx.err(
                    path,
                    SpecErrorKind::DuplicateName {
                        what: format!("{object} folder"),
                        name: folder.path.clone(),
                    },
                ));
            }
        }
        if !in_array && !in_group {
            return Err(ctx.err(
                path,
                SpecErrorKind::Invalid("in: name \"array\", \"group\" or both".into()),
            ));
        }
        check_gates(ctx, &path, folder.since, None, gates)?;
        let (loaded_as, refusal) = match (folder.listed_whole, &folder.loaded_as, &folder.refusal) {
            (true, Some(loaded_as), Some(refusal)) => (loaded_as.clone(), refusal.clone()),
            (true, _, _) => {
                return Err(ctx.err(
                    path,
                    SpecErrorKind::Invalid(
                        "listed_whole needs loaded_as and refusal (what TileDB loads each file as, what fails beside an unexpected one)".into(),
                    ),
                ))
            }
            (false, None, None) => (String::new(), String::new()),
            (false, _, _) => {
                return Err(ctx.err(
                    path,
                    SpecErrorKind::Invalid(
                        "loaded_as and refusal describe a folder listed whole; set listed_whole = true or remove them".into(),
                    ),
                ))
            }
        };
        out.push(Folder {
            path: folder.path.clone(),
            constant: folder.constant.clone(),
            in_array,
            in_group,
            since: folder.since,
            doc: folder.doc.clone(),
            listed_whole: folder.listed_whole,
            loaded_as,
            refusal,
            reason: folder.reason.clone(),
            source: folder.source.clone(),
        });
    }
    Ok(out)
}

fn syntax_message(err: &toml::de::Error) -> String {
    err.to_string().trim().replace('\n', " ").replace("  ", " ")
}

fn is_snake(name: &str) -> bool {
    !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn is_upper_camel(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric())
}

fn check_gates(
    ctx: &Ctx,
    path: &str,
    since: Option<u32>,
    until: Option<u32>,
    range: GateRange,
) -> Result<(), SpecError> {
    for (key, value) in [("since", since), ("until", until)] {
        if let Some(value) = value {
            if value < range.oldest || value > range.newest {
                return Err(ctx.err(
                    path,
                    SpecErrorKind::GateOutOfRange {
                        key,
                        value,
                        oldest: range.oldest,
                        newest: range.newest,
                    },
                ));
            }
        }
    }
    if let (Some(since), Some(until)) = (since, until) {
        if since >= until {
            return Err(ctx.err(path, SpecErrorKind::InvertedGate { since, until }));
        }
    }
    Ok(())
}

/// Resolves a type as written: a primitive, bool, bytes, a declared name,
/// `Option<T>`, `Vec<T>` or `[T]`.
fn resolve_ty(text: &str, declared: &Declared) -> Result<Ty, SpecErrorKind> {
    let text = text.trim();
    if let Some(inner) = text
        .strip_prefix("Option<")
        .and_then(|t| t.strip_suffix('>'))
    {
        return Ok(Ty::Option(Box::new(resolve_ty(inner, declared)?)));
    }
    if let Some(inner) = text
        .strip_prefix("Vec<")
        .and_then(|t| t.strip_suffix('>'))
        .or_else(|| text.strip_prefix('[').and_then(|t| t.strip_suffix(']')))
    {
        return Ok(Ty::List(Box::new(resolve_ty(inner, declared)?)));
    }
    if let Some(prim) = Prim::parse(text) {
        return Ok(Ty::Prim(prim));
    }
    match text {
        "bool" => return Ok(Ty::Bool),
        "bytes" => return Ok(Ty::Bytes),
        _ => {}
    }
    match declared.get(text) {
        Some((_, Kind::Enum)) => Ok(Ty::Enum(text.to_string())),
        Some((_, Kind::Context)) => Ok(Ty::Context(text.to_string())),
        Some((_, Kind::Struct)) => Ok(Ty::Struct(text.to_string())),
        None => Err(SpecErrorKind::UnknownType(text.to_string())),
    }
}

fn parse_expr(ctx: &Ctx, path: &str, key: &str, raw: &RawExpr) -> Result<Parsed, SpecError> {
    let text = raw.text();
    let syn = parse(&text).map_err(|reason| {
        ctx.err(
            path,
            SpecErrorKind::BadExpression {
                key: key.to_string(),
                reason,
            },
        )
    })?;
    Ok(Parsed { text, syn })
}
