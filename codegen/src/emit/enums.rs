//! Enums: takes a checked [`Enum`], gives the binrw enum with its value,
//! name, gate and property methods.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::docs::{doc_attrs, doc_lines, gate_text};
use super::expr::prim_tokens;
use crate::model::*;
use crate::naming::ident;

pub(super) fn emit_enum(spec_enum: &Enum) -> TokenStream {
    let name = ident(&spec_enum.name);
    let repr = prim_tokens(spec_enum.repr);
    let doc = enum_doc(spec_enum);
    let read_impl = read_impl(spec_enum);
    let mut variants = TokenStream::new();
    let mut names = Vec::new();
    let mut values = Vec::new();
    for variant in &spec_enum.variants {
        let v = ident(&variant.rust_name);
        let value = int_literal(variant.value);
        let vdoc = doc_attrs(&variant_doc(variant));
        // `Default` is the value zeroed bytes read as, where there is one.
        let default = (variant.value == 0).then(|| quote!(#[default]));
        variants.extend(quote!(#vdoc #default #v = #value,));
        names.push((v.clone(), variant.name.clone()));
        values.push((v, value));
    }
    let all: Vec<_> = names.iter().map(|(v, _)| quote!(#name::#v)).collect();
    let name_arms: Vec<_> = names
        .iter()
        .map(|(v, spec_name)| quote!(#name::#v => #spec_name))
        .collect();
    let from_arms: Vec<_> = values
        .iter()
        .map(|(v, value)| quote!(#value => Some(#name::#v)))
        .collect();
    let deprecated: Vec<_> = spec_enum
        .variants
        .iter()
        .filter(|v| v.deprecated)
        .map(|v| {
            let id = ident(&v.rust_name);
            quote!(#name::#id)
        })
        .collect();
    let is_deprecated = if deprecated.is_empty() {
        quote!(false)
    } else {
        quote!(matches!(self, #(#deprecated)|*))
    };
    let gated = |pick: fn(&Variant) -> Option<u32>| -> TokenStream {
        let arms: Vec<_> = spec_enum
            .variants
            .iter()
            .filter_map(|v| {
                pick(v).map(|n| {
                    let id = ident(&v.rust_name);
                    quote!(#name::#id => Some(#n))
                })
            })
            .collect();
        if arms.is_empty() {
            quote!(None)
        } else if arms.len() == spec_enum.variants.len() {
            quote!(match self { #(#arms,)* })
        } else {
            quote!(match self { #(#arms,)* _ => None })
        }
    };
    let since = gated(|v| v.since);
    let until = gated(|v| v.until);
    let property_methods: TokenStream = spec_enum
        .properties
        .iter()
        .enumerate()
        .map(|(index, (property, prop_ty))| property_method(spec_enum, index, property, *prop_ty))
        .collect();
    let default = has_zero(spec_enum).then(|| quote!(Default,));
    quote! {
        #doc
        #[binrw::binwrite]
        #[bw(little, repr = #repr)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, #default serde::Serialize)]
        #[repr(#repr)]
        pub enum #name {
            #variants
        }

        #read_impl

        impl #name {
            /// Every value, in the order the spec lists them.
            pub const ALL: &'static [#name] = &[#(#all),*];

            /// The spec's spelling of this value.
            pub const fn name(self) -> &'static str {
                match self { #(#name_arms,)* }
            }

            /// The number stored on disk.
            pub const fn value(self) -> #repr {
                self as #repr
            }

            /// The value stored as `value`, if there is one.
            pub const fn from_value(value: #repr) -> Option<Self> {
                match value { #(#from_arms,)* _ => None }
            }

            /// Whether upstream marks this value deprecated.
            pub const fn is_deprecated(self) -> bool {
                #is_deprecated
            }

            /// The first format version in which this value is valid, if limited.
            pub const fn since(self) -> Option<u32> {
                #since
            }

            /// The format version from which this value is no longer valid, if limited.
            pub const fn until(self) -> Option<u32> {
                #until
            }

            /// Whether this value is valid in format `version` (within its
            /// `since`/`until`). A file of another version holding it is
            /// unsupported, not corrupt.
            pub const fn exists_in(self, version: u32) -> bool {
                let from = match self.since() {
                    Some(since) => version >= since,
                    None => true,
                };
                let before = match self.until() {
                    Some(until) => version < until,
                    None => true,
                };
                from && before
            }

            #property_methods
        }

        impl core::fmt::Display for #name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }
    }
}

/// The enum's doc: the spec's text, its source, any erratum, how it is stored.
fn enum_doc(spec_enum: &Enum) -> TokenStream {
    let mut doc = spec_enum.doc.as_deref().map(doc_lines).unwrap_or_default();
    if let Some(source) = &spec_enum.source {
        doc.push(String::new());
        doc.push(format!("Source: `{source}`."));
    }
    if let Some(erratum) = &spec_enum.erratum {
        doc.push(String::new());
        doc.push(format!("Erratum: {erratum}"));
    }
    doc.push(String::new());
    doc.push(format!(
        "Stored as a `{}`; any other value is a read error.",
        spec_enum.repr.name()
    ));
    doc_attrs(&doc)
}

/// The enum's reader: a stored number that names no value is corrupt
/// (`Cause::BadEnumValue`, naming the enum), not binrw's anonymous error.
fn read_impl(spec_enum: &Enum) -> TokenStream {
    let name = ident(&spec_enum.name);
    let repr = prim_tokens(spec_enum.repr);
    let enum_name = spec_enum.name.as_str();
    quote! {
        /// Reads the stored number; one that names no value is corrupt
        /// (`Cause::BadEnumValue`, naming this enum).
        impl binrw::BinRead for #name {
            type Args<'a> = ();

            fn read_options<R: binrw::io::Read + binrw::io::Seek>(
                reader: &mut R,
                _endian: binrw::Endian,
                _args: (),
            ) -> binrw::BinResult<Self> {
                let pos = binrw::io::Seek::stream_position(reader)?;
                let value = <#repr as binrw::BinRead>::read_options(reader, binrw::Endian::Little, ())?;
                Self::from_value(value).ok_or_else(|| {
                    crate::format::io::bad_enum_value(pos, #enum_name, value)
                })
            }
        }
    }
}

/// The doc of one variant: its spelling and value, gates, deprecation, source.
fn variant_doc(variant: &Variant) -> Vec<String> {
    let mut vdoc = Vec::new();
    vdoc.push(format!(
        "`{}` = {}{}",
        variant.name,
        variant.value,
        variant
            .doc
            .as_deref()
            .map(|d| format!(": {d}"))
            .unwrap_or_default()
    ));
    if variant.since.is_some() || variant.until.is_some() {
        vdoc.push(String::new());
        vdoc.push(format!(
            "Valid in {}.",
            gate_text(variant.since, variant.until)
        ));
    }
    if variant.deprecated {
        vdoc.push(String::new());
        vdoc.push("Deprecated.".into());
    }
    if let Some(source) = &variant.source {
        vdoc.push(String::new());
        vdoc.push(format!("Source: `{source}`."));
    }
    if let Some(erratum) = &variant.erratum {
        vdoc.push(String::new());
        vdoc.push(format!("Erratum: {erratum}"));
    }
    vdoc
}

/// A `const fn` giving one declared property of each value.
fn property_method(spec_enum: &Enum, index: usize, property: &str, prop_ty: PropTy) -> TokenStream {
    let name = ident(&spec_enum.name);
    let method = ident(property);
    let (ret, values): (TokenStream, Vec<TokenStream>) = match prop_ty {
        PropTy::Int(p) => (
            prim_tokens(p),
            spec_enum
                .variants
                .iter()
                .map(|v| {
                    let n = v.props[index].as_integer().unwrap_or_default();
                    let lit = int_literal(i128::from(n));
                    quote!(#lit)
                })
                .collect(),
        ),
        PropTy::Bool => (
            quote!(bool),
            spec_enum
                .variants
                .iter()
                .map(|v| {
                    let b = v.props[index].as_bool().unwrap_or_default();
                    quote!(#b)
                })
                .collect(),
        ),
        PropTy::Struct => (
            quote!(Option<&'static str>),
            spec_enum
                .variants
                .iter()
                .map(|v| match StructRef::parse(&v.props[index]) {
                    Some(r) => {
                        let name = r.name;
                        quote!(Some(#name))
                    }
                    None => quote!(None),
                })
                .collect(),
        ),
        PropTy::Str => (
            quote!(&'static str),
            spec_enum
                .variants
                .iter()
                .map(|v| {
                    let s = v.props[index].as_str().unwrap_or_default();
                    quote!(#s)
                })
                .collect(),
        ),
    };
    // Group variants by value so the match stays short.
    let mut grouped: Vec<(String, TokenStream, Vec<TokenStream>)> = Vec::new();
    for (variant, value) in spec_enum.variants.iter().zip(values) {
        let key = value.to_string();
        let id = ident(&variant.rust_name);
        let pattern = quote!(#name::#id);
        if let Some(group) = grouped.iter_mut().find(|g| g.0 == key) {
            group.2.push(pattern);
        } else {
            grouped.push((key, value, vec![pattern]));
        }
    }
    let arms: Vec<_> = grouped
        .iter()
        .map(|(_, value, patterns)| quote!(#(#patterns)|* => #value))
        .collect();
    let doc = match prop_ty {
        PropTy::Struct => format!(
            " The struct of spec/ that is the `{property}` of this value, by name (`None`: none)."
        ),
        _ => format!(" The `{property}` of this value, as the spec lists it."),
    };
    quote! {
        #[doc = #doc]
        pub const fn #method(self) -> #ret {
            match self { #(#arms,)* }
        }
    }
}

fn int_literal(value: i128) -> TokenStream {
    let lit = Literal::i128_unsuffixed(value);
    quote!(#lit)
}

/// Whether the enum has a value 0, which its generated `Default` gives.
pub(super) fn has_zero(spec_enum: &Enum) -> bool {
    spec_enum.variants.iter().any(|v| v.value == 0)
}
