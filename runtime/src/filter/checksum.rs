//! CHECKSUM_MD5 and CHECKSUM_SHA256 (`checksum_md5_filter.cc`,
//! `checksum_sha256_filter.cc`): the data passes through unchanged; the
//! metadata records, for every earlier metadata part and then every data
//! part, `{bytes u64, digest}`. Reading verifies every digest; a mismatch is
//! a corrupt tile.
//!
//! Metadata: `n_metadata_parts u32, n_data_parts u32`, the records, then the
//! earlier metadata (`ChecksumChunkMetadata` in spec/filter_metadata.toml,
//! read and written through its generated view).

use md5::Md5;
use sha2::{Digest, Sha256};

use super::stage::{
    view, write_fault, Cursor, Fault, MetadataOut, OutBuf, Parts, StageEnv, StageResult,
};
use super::Filter;
use crate::error::Cause;
use crate::format::generated::{Checksum, ChecksumChunkMetadataView};

fn digest(filter: &Filter, bytes: &[u8]) -> Vec<u8> {
    match filter {
        Filter::ChecksumMd5 => Md5::digest(bytes).to_vec(),
        _ => Sha256::digest(bytes).to_vec(),
    }
}

fn digest_len(filter: &Filter) -> usize {
    match filter {
        Filter::ChecksumMd5 => 16,
        _ => 32,
    }
}

pub(crate) fn forward<'a>(env: &StageEnv<'_>, input: Parts<'a>) -> StageResult<Parts<'a>> {
    let checksums: Vec<Checksum> = input
        .all_slices()
        .map(|part| Checksum {
            part_len: part.len() as u64,
            digest: digest(env.filter, part),
        })
        .collect();
    let (md_checksums, data_checksums) = checksums.split_at(input.metadata.len());
    let len = digest_len(env.filter);
    let mut md = Vec::with_capacity(8 + checksums.len() * (8 + len));
    ChecksumChunkMetadataView::write(&mut md, len as u64, md_checksums, data_checksums)
        .map_err(write_fault)?;
    let mut metadata = vec![md];
    metadata.extend(view(input.metadata));
    Ok(Parts {
        metadata,
        data: view(input.data),
    })
}

pub(crate) fn reverse(
    env: &StageEnv<'_>,
    md: &mut Cursor<'_>,
    data: &[u8],
    out: &mut OutBuf<'_>,
) -> StageResult<MetadataOut> {
    let name = env.filter.name();
    let len = digest_len(env.filter) as u64;
    let (header, start) = md.read_view::<ChecksumChunkMetadataView<'_>>((len,))?;
    // The metadata this checksum covers is what follows its own.
    let covered_metadata = md.rest();
    let n_metadata = header.md_checksums().len();
    let records = header
        .md_checksums()
        .iter()
        .chain(header.data_checksums().iter());
    let (mut md_pos, mut data_pos) = (0usize, 0usize);
    for (i, record) in records.enumerate() {
        let record = record.map_err(|e| md.fault(start, e))?;
        let expected = record.digest();
        let (source, pos, what) = if i < n_metadata {
            (covered_metadata, &mut md_pos, "metadata")
        } else {
            (data, &mut data_pos, "data")
        };
        let size = usize::try_from(record.part_len()).unwrap_or(usize::MAX);
        let part = || {
            let index = if i < n_metadata { i } else { i - n_metadata };
            format!("{what} part {index}")
        };
        if size > source.len() - *pos {
            return Err(Fault::CorruptPart(
                part(),
                Cause::Truncated {
                    needed: size as u64,
                    available: (source.len() - *pos) as u64,
                },
            ));
        }
        let actual = digest(env.filter, &source[*pos..*pos + size]);
        if actual != expected {
            return Err(Fault::CorruptPart(
                part(),
                Cause::ChecksumMismatch {
                    algorithm: name,
                    expected: hex(expected),
                    actual: hex(&actual),
                },
            ));
        }
        *pos += size;
    }
    out.put(data)?;
    Ok(MetadataOut::Rest)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
