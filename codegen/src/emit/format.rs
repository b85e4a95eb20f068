//! The format module and the module index: takes the model, gives
//! `format.rs` (the versions of the format) and `mod.rs` (every module, and
//! the table of version-gated fields that tests walk).

use proc_macro2::TokenStream;
use quote::quote;

use super::render::render;
use crate::model::*;
use crate::naming::ident;

pub fn emit_format(spec: &Spec) -> String {
    let current = spec.current;
    let oldest = spec.oldest;
    let reads = spec.reads;
    let writes = spec.writes;
    let versions: Vec<TokenStream> = spec
        .versions
        .iter()
        .map(|v| {
            let number = v.number;
            let release = v.release.clone().unwrap_or_default();
            let changes = &v.changes;
            quote!(FormatVersion { number: #number, release: #release, changes: &[#(#changes),*] })
        })
        .collect();
    let upstream = &spec.upstream;
    let repository = &upstream.repository;
    let format_spec_commit = &upstream.format_spec_commit;
    let release_tag = &upstream.release_tag;
    let release_commit = &upstream.release_commit;
    let facts: Vec<TokenStream> = spec
        .facts
        .iter()
        .map(|f| {
            let name = &f.name;
            let erratum = f.erratum;
            let statement = &f.statement;
            let source = &f.source;
            quote!(FormatFact { name: #name, erratum: #erratum, statement: #statement, source: #source })
        })
        .collect();
    let fact_values: Vec<TokenStream> = spec
        .facts
        .iter()
        .filter_map(|f| {
            let value = f.value?;
            let id = quote::format_ident!("{}", f.name.to_uppercase());
            let doc = format!("{} Source: `{}`.", f.statement, f.source);
            Some(quote!(#[doc = #doc] pub const #id: u64 = #value;))
        })
        .collect();
    let gate_fns: Vec<TokenStream> = spec.gates.iter().map(gate_fn).collect();
    let gate_rows: Vec<TokenStream> = spec
        .gates
        .iter()
        .map(|g| {
            let (name, doc, source) = (&g.name, &g.doc, &g.source);
            let since = opt(g.since);
            let until = opt(g.until);
            quote!(BehaviourGate { name: #name, since: #since, until: #until, doc: #doc, source: #source })
        })
        .collect();
    let tokens = quote! {
        //! The format versions the spec describes, the upstream commits it
        //! follows, the facts upstream's documents lack or get wrong, and the
        //! behaviours that change with the version.

        /// A behaviour that holds for the format versions `since..until`
        /// (`[[gate]]` in `spec/format.toml`), each also a function of its name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct BehaviourGate {
            /// The gate's key; also the name of its function.
            pub name: &'static str,
            /// The first version where it holds (`None`: from the oldest).
            pub since: Option<u32>,
            /// The first version where it no longer holds (`None`: every newer one).
            pub until: Option<u32>,
            /// What holds.
            pub doc: &'static str,
            /// Where in upstream's code.
            pub source: &'static str,
        }

        /// Every behaviour gate of `spec/format.toml`.
        pub const BEHAVIOUR_GATES: &[BehaviourGate] = &[#(#gate_rows),*];

        #(#gate_fns)*

        /// The upstream repository whose `format_spec/` spec/ follows.
        pub const UPSTREAM_REPOSITORY: &str = #repository;

        /// The newest commit touching `format_spec/` that spec/ was checked against.
        pub const UPSTREAM_FORMAT_SPEC_COMMIT: &str = #format_spec_commit;

        /// The release whose behaviour this implementation matches.
        pub const UPSTREAM_RELEASE_TAG: &str = #release_tag;

        /// The commit of [`UPSTREAM_RELEASE_TAG`].
        pub const UPSTREAM_RELEASE_COMMIT: &str = #release_commit;

        /// A fact upstream's documents lack or get wrong (`[[fact]]` in `spec/format.toml`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct FormatFact {
            /// The fact's key in `spec/format.toml`; also the name of its constant.
            pub name: &'static str,
            /// Upstream's document says otherwise (else: it says nothing).
            pub erratum: bool,
            /// The fact itself, in one or two sentences.
            pub statement: &'static str,
            /// Where in upstream's code the fact comes from.
            pub source: &'static str,
        }

        /// Every fact of `spec/format.toml`.
        pub const FORMAT_FACTS: &[FormatFact] = &[#(#facts),*];

        #(#fact_values)*

        /// The newest layout described in `spec/` (upstream's newest); not
        /// what this implementation supports: see the two below.
        pub const CURRENT_FORMAT_VERSION: u32 = #current;

        /// The oldest layout accepted.
        pub const OLDEST_FORMAT_VERSION: u32 = #oldest;

        /// The newest format version this implementation reads (`reads` in
        /// `spec/format.toml`); newer files are unsupported.
        pub const NEWEST_READ_FORMAT_VERSION: u32 = #reads;

        /// The format version this implementation writes (`writes` in
        /// `spec/format.toml`).
        pub const WRITE_FORMAT_VERSION: u32 = #writes;

        /// One version of the format and what it changed.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct FormatVersion {
            /// The number stored in files (`version` of the schema, fragment metadata, ...).
            pub number: u32,
            /// The TileDB release that introduced it.
            pub release: &'static str,
            /// What this version changed in the layout, one line per change.
            pub changes: &'static [&'static str],
        }

        /// The history of the format, oldest first.
        pub const FORMAT_VERSIONS: &[FormatVersion] = &[#(#versions),*];
    };
    render("spec/format.toml", tokens)
}

pub fn emit_mod(spec: &Spec) -> String {
    let mut modules: Vec<String> = spec.files.iter().map(|f| f.module.clone()).collect();
    modules.push(spec.format_module.clone());
    modules.sort();
    let idents: Vec<syn::Ident> = modules.iter().map(|m| ident(m)).collect();
    // Modules with items are re-exported; a prose-only module has nothing to export.
    let exported: Vec<syn::Ident> = modules
        .iter()
        .filter(|m| {
            !spec.files.iter().any(|f| {
                &f.module == *m
                    && f.enums.is_empty()
                    && f.contexts.is_empty()
                    && f.structs.is_empty()
                    && f.folders.is_empty()
            })
        })
        .map(|m| ident(m))
        .collect();
    let mut gates = Vec::new();
    for file in &spec.files {
        for structure in &file.structs {
            let kept: Vec<String> = structure
                .fields
                .iter()
                .filter(|f| f.is_stored())
                .map(|f| f.ident.clone())
                .collect();
            for field in &structure.fields {
                if field.since.is_none() && field.until.is_none() {
                    continue;
                }
                let sname = &structure.name;
                let fname = &field.name;
                let fident = &field.ident;
                let since = opt_u32(field.since);
                let until = opt_u32(field.until);
                let stored = matches!(field.role, Role::Stored);
                let optional = field.is_optional();
                let conditional = field.condition.is_some();
                let module = &file.module;
                gates.push(quote! {
                    VersionGate {
                        module: #module,
                        structure: #sname,
                        field: #fname,
                        rust_field: #fident,
                        since: #since,
                        until: #until,
                        stored: #stored,
                        optional: #optional,
                        conditional: #conditional,
                        kept_fields: &[#(#kept),*],
                    }
                });
            }
        }
    }
    let tokens = quote! {
        //! The byte layouts of spec/, one module per spec file.

        #(pub mod #idents;)*
        #(pub use #exported::*;)*

        /// A field that only some format versions have: the table of them lets
        /// tests cover every gate of the spec.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct VersionGate {
            /// The generated module that holds the structure (`format::generated::<module>`).
            pub module: &'static str,
            /// The spec's name of the layout holding the field.
            pub structure: &'static str,
            /// The spec's name of the field.
            pub field: &'static str,
            /// The name of the field in the generated struct.
            pub rust_field: &'static str,
            /// The first format version that has the field (`None`: every version up to `until`).
            pub since: Option<u32>,
            /// The last format version that has the field (`None`: every version from `since` on).
            pub until: Option<u32>,
            /// Kept in the struct (not a length, size or fixed value).
            pub stored: bool,
            /// An `Option` in the struct (no default where absent).
            pub optional: bool,
            /// Also subject to a data-dependent `if`.
            pub conditional: bool,
            /// The fields the generated struct keeps, in order.
            pub kept_fields: &'static [&'static str],
        }

        /// Every version-gated field of the spec.
        pub const VERSION_GATES: &[VersionGate] = &[#(#gates),*];
    };
    render("spec/*.toml", tokens)
}

fn opt_u32(value: Option<u32>) -> TokenStream {
    match value {
        Some(v) => quote!(Some(#v)),
        None => quote!(None),
    }
}

fn opt(value: Option<u32>) -> TokenStream {
    match value {
        Some(v) => quote!(Some(#v)),
        None => quote!(None),
    }
}

/// `pub const fn <name>(version: u32) -> bool` for one behaviour gate.
fn gate_fn(gate: &Gate) -> TokenStream {
    let name = ident(&gate.name);
    let range = match (gate.since, gate.until) {
        (Some(since), Some(until)) => format!("versions {since} to {}", until - 1),
        (Some(since), None) => format!("from version {since}"),
        (None, Some(until)) => format!("before version {until}"),
        (None, None) => "every version".into(),
    };
    let doc = format!(" {} ({range}; source: `{}`.)", gate.doc, gate.source);
    let test = match (gate.since, gate.until) {
        (Some(since), Some(until)) => quote!(version >= #since && version < #until),
        (Some(since), None) => quote!(version >= #since),
        (None, Some(until)) => quote!(version < #until),
        (None, None) => quote!(true),
    };
    quote! {
        #[doc = #doc]
        pub const fn #name(version: u32) -> bool {
            #test
        }
    }
}
