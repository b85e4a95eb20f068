//! Schema evolution: attributes added and dropped, enumerations added,
//! extended and dropped, the current domain expanded — in the order and
//! with the checks of TileDB's `ArraySchemaEvolution::evolve_schema` and the
//! `ArraySchema` methods it calls, then the whole evolved schema checked as
//! a new one is ([`SchemaBuilder::build`], TileDB's `check_without_config`).
//!
//! The new enumeration files are written first and the schema file last:
//! readers take the newest schema file, so until it is there the array is
//! as it was (an unreferenced enumeration file changes nothing), and a
//! refused evolution writes nothing.

use std::collections::BTreeSet;

use crate::directory::{ENUMERATIONS_DIR, SCHEMA_DIR};
use crate::error::{Error, Result};
use crate::schema::builder::{AttributeSpec, EnumerationSpec};
use crate::schema::{ArraySchema, Scalar, SchemaBuilder};
use crate::storage::{RelPath, Storage};

fn usage(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}

/// The changes of one schema evolution, gathered as TileDB's
/// `ArraySchemaEvolution` gathers them (each setter's own checks), applied
/// by [`SchemaEvolution::apply`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchemaEvolution {
    add_attributes: Vec<AttributeSpec>,
    drop_attributes: BTreeSet<String>,
    add_enumerations: Vec<EnumerationSpec>,
    extend_enumerations: Vec<(String, Vec<Vec<u8>>)>,
    drop_enumerations: BTreeSet<String>,
    current_domain: Option<Vec<(Vec<u8>, Vec<u8>)>>,
    timestamp: u64,
}

impl SchemaEvolution {
    /// No changes yet; stamped with the time it is applied.
    pub fn new() -> SchemaEvolution {
        SchemaEvolution::default()
    }

    /// Adds an attribute (refused if one of that name is already to be
    /// added; an earlier drop of that name is forgotten).
    pub fn add_attribute(&mut self, attribute: AttributeSpec) -> Result<&mut Self> {
        if self.add_attributes.iter().any(|a| a.name == attribute.name) {
            return Err(usage(format!(
                "cannot add attribute {}: an attribute of that name is already to be added",
                attribute.name
            )));
        }
        self.drop_attributes.remove(&attribute.name);
        self.add_attributes.push(attribute);
        Ok(self)
    }

    /// Drops the attribute `name` (and forgets an addition of that name).
    pub fn drop_attribute(&mut self, name: &str) -> &mut Self {
        self.add_attributes.retain(|a| a.name != name);
        self.drop_attributes.insert(name.to_string());
        self
    }

    /// Adds an enumeration (refused if one of that name is already to be
    /// added).
    pub fn add_enumeration(&mut self, enumeration: EnumerationSpec) -> Result<&mut Self> {
        if self
            .add_enumerations
            .iter()
            .any(|e| e.name == enumeration.name)
        {
            return Err(usage(format!(
                "cannot add enumeration {}: it is already to be added",
                enumeration.name
            )));
        }
        self.add_enumerations.push(enumeration);
        Ok(self)
    }

    /// Appends `values` (each one entry's bytes) to the enumeration `name`
    /// (refused if it is already extended in this evolution).
    pub fn extend_enumeration(&mut self, name: &str, values: Vec<Vec<u8>>) -> Result<&mut Self> {
        if self.extend_enumerations.iter().any(|(n, _)| n == name) {
            return Err(usage(format!(
                "cannot extend enumeration {name}: it is already extended in this evolution"
            )));
        }
        self.extend_enumerations.push((name.to_string(), values));
        Ok(self)
    }

    /// Drops the enumeration `name` (and forgets an addition or extension
    /// of it). Dropping one the schema does not have is no error, as in
    /// TileDB; dropping one an attribute uses is.
    pub fn drop_enumeration(&mut self, name: &str) -> &mut Self {
        self.add_enumerations.retain(|e| e.name != name);
        self.extend_enumerations.retain(|(n, _)| n != name);
        self.drop_enumerations.insert(name.to_string());
        self
    }

    /// Expands the current domain to `ranges` (one `[lo, hi]` per
    /// dimension, as bytes); it must cover the present one.
    pub fn expand_current_domain(&mut self, ranges: Vec<(Vec<u8>, Vec<u8>)>) -> Result<&mut Self> {
        if ranges.is_empty() {
            return Err(usage(
                "cannot expand the current domain: the new current domain is empty",
            ));
        }
        self.current_domain = Some(ranges);
        Ok(self)
    }

    /// Stamps the new schema file with `timestamp` (milliseconds; 0, the
    /// default, means the time it is applied).
    pub fn timestamp(&mut self, timestamp: u64) -> &mut Self {
        self.timestamp = timestamp;
        self
    }

    /// The evolved schema's builder: `current` with the changes applied in
    /// TileDB's order (enumerations added, extended; attributes added,
    /// dropped; enumerations dropped; the current domain expanded).
    pub fn evolve(&self, current: &ArraySchema) -> Result<SchemaBuilder> {
        let mut b = SchemaBuilder::from_schema(current)?;
        for e in &self.add_enumerations {
            if b.enumerations.iter().any(|x| x.name == e.name) {
                return Err(usage(format!(
                    "cannot add enumeration {}: the schema already has one of that name",
                    e.name
                )));
            }
            let mut e = e.clone();
            e.path = None;
            b.enumerations.push(e);
        }
        for (name, values) in &self.extend_enumerations {
            let e = b
                .enumerations
                .iter_mut()
                .find(|x| &x.name == name)
                .ok_or_else(|| {
                    usage(format!(
                        "cannot extend enumeration {name}: the schema has no enumeration of that name"
                    ))
                })?;
            if values.is_empty() {
                return Err(usage(format!(
                    "cannot extend enumeration {name}: no values to append"
                )));
            }
            e.values.extend(values.iter().cloned());
            // A fresh file: the old one stays for the older schemas.
            e.path = None;
        }
        for a in &self.add_attributes {
            if let Some(enumeration) = &a.enumeration {
                if !b.enumerations.iter().any(|e| &e.name == enumeration) {
                    return Err(usage(format!(
                        "cannot add attribute {}: it refers to an unknown enumeration {enumeration}",
                        a.name
                    )));
                }
            }
            b.attributes.push(a.clone());
        }
        for name in &self.drop_attributes {
            let before = b.attributes.len();
            b.attributes.retain(|a| &a.name != name);
            if b.attributes.len() == before {
                return Err(usage(format!(
                    "cannot drop attribute {name}: it is a dimension or does not exist"
                )));
            }
        }
        for name in &self.drop_enumerations {
            if let Some(a) = b
                .attributes
                .iter()
                .find(|a| a.enumeration.as_deref() == Some(name))
            {
                return Err(usage(format!(
                    "cannot drop enumeration {name}: attribute {} uses it",
                    a.name
                )));
            }
            b.enumerations.retain(|e| &e.name != name);
        }
        if let Some(ranges) = &self.current_domain {
            if let Some(old) = &b.current_domain {
                check_covers(&b, old, ranges)?;
            }
            b.current_domain = Some(ranges.clone());
        }
        Ok(b)
    }

    /// Evolves the schema of the array rooted at `storage` (`current`, its
    /// latest schema) and writes it: the new enumeration files, then the
    /// schema file. Returns the new schema, loaded. A refused evolution
    /// writes nothing.
    pub fn apply(
        &self,
        storage: &dyn Storage,
        current: &ArraySchema,
        key: Option<&[u8; 32]>,
    ) -> Result<ArraySchema> {
        let mut builder = self.evolve(current)?;
        builder.encryption_key = key.copied();
        let built = builder.build()?;
        let old_paths: BTreeSet<&[u8]> = current
            .stored
            .enumerations
            .iter()
            .flatten()
            .map(|r| r.path.as_slice())
            .collect();
        let new_files: Vec<_> = built
            .enumerations
            .iter()
            .filter(|e| !old_paths.contains(e.path.as_slice()))
            .collect();
        if !new_files.is_empty() {
            storage.create_dir(&RelPath::root().join(SCHEMA_DIR)?.join(ENUMERATIONS_DIR)?)?;
        }
        for e in new_files {
            super::write_enumeration(storage, &String::from_utf8_lossy(&e.path), e, key)?;
        }
        let written = super::write_schema(storage, &built.schema, self.timestamp, key)?;
        ArraySchema::load(
            storage,
            &RelPath::root().join(SCHEMA_DIR)?.join(&written.name)?,
            key,
        )
    }
}

/// TileDB's `CurrentDomain::covered`: each new range holds the old one.
fn check_covers(
    b: &SchemaBuilder,
    old: &[(Vec<u8>, Vec<u8>)],
    new: &[(Vec<u8>, Vec<u8>)],
) -> Result<()> {
    if old.len() != new.len() {
        return Err(usage(format!(
            "the new current domain has {} ranges for {} dimensions",
            new.len(),
            old.len()
        )));
    }
    for ((d, (olo, ohi)), (nlo, nhi)) in b.dimensions.iter().zip(old).zip(new) {
        let t = d.datatype;
        let decode = |bytes: &[u8]| {
            Scalar::decode(t, bytes).ok_or_else(|| {
                usage(format!(
                    "dimension {}: a current-domain bound is not a {} value",
                    d.name,
                    t.name()
                ))
            })
        };
        let (olo, ohi, nlo, nhi) = (decode(olo)?, decode(ohi)?, decode(nlo)?, decode(nhi)?);
        if nlo.compare(&olo).is_gt() || nhi.compare(&ohi).is_lt() {
            return Err(usage(format!(
                "dimension {}: the current domain can only be expanded, and the new range does not hold the present one",
                d.name
            )));
        }
    }
    Ok(())
}
