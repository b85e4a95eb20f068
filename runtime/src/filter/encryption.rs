//! AES-256-GCM (`encryption_aes256gcm_filter.cc`, `crypto_openssl.cc`): every
//! earlier metadata part and then every data part is encrypted on its own
//! with a fresh random 12-byte IV and no associated data; the ciphertext has
//! the plaintext's length. Like a compressor, it consumes the earlier
//! metadata and restores it on the way back.
//!
//! Metadata: `n_metadata_parts u32, n_data_parts u32`, then per part
//! `{plain u32, encrypted u32, iv[12], tag[16]}` (`Aes256GcmMetadata` in
//! spec/filter_metadata.toml, read and written through its generated view).
//! Data: the ciphertexts, metadata parts first.

use aes_gcm::aead::{AeadCore, AeadInPlace, KeyInit, OsRng};
use aes_gcm::{Aes256Gcm, Nonce, Tag};

use super::stage::{
    corrupt, corrupt_part, write_fault, Cursor, Fault, MetadataOut, OutBuf, Parts, StageEnv,
    StageResult,
};
use crate::error::Cause;
use crate::format::generated::{Aes256GcmMetadataView, AesPart, AesPartView};

fn cipher(env: &StageEnv<'_>) -> Option<Aes256Gcm> {
    env.ctx
        .encryption_key
        .map(|key| Aes256Gcm::new(&key.into()))
}

pub(crate) fn forward<'a>(env: &StageEnv<'_>, input: Parts<'a>) -> StageResult<Parts<'a>> {
    let Some(cipher) = cipher(env) else {
        return Err(Fault::Usage("AES-256-GCM needs an encryption key".into()));
    };
    let mut records = Vec::with_capacity(input.metadata.len() + input.data.len());
    let mut out = Vec::with_capacity(input.data_len() + 64);
    for part in input.all_slices() {
        let size =
            u32::try_from(part.len()).map_err(|_| Fault::Usage("a part exceeds 4 GiB".into()))?;
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let start = out.len();
        out.extend_from_slice(part);
        let tag = cipher
            .encrypt_in_place_detached(&nonce, b"", &mut out[start..])
            .map_err(|_| Fault::Usage("AES-256-GCM encryption failed".into()))?;
        records.push(AesPart {
            plain_len: size,
            encrypted_len: size,
            iv: nonce.to_vec(),
            tag: tag.to_vec(),
        });
    }
    let (md_parts, data_parts) = records.split_at(input.metadata.len());
    let mut md = Vec::with_capacity(8 + AesPartView::MIN_SIZE * records.len());
    Aes256GcmMetadataView::write(&mut md, md_parts, data_parts).map_err(write_fault)?;
    Ok(Parts {
        metadata: vec![md],
        data: vec![out.into()],
    })
}

pub(crate) fn reverse(
    env: &StageEnv<'_>,
    md: &mut Cursor<'_>,
    data: &[u8],
    out: &mut OutBuf<'_>,
) -> StageResult<MetadataOut> {
    let Some(cipher) = cipher(env) else {
        return Err(Fault::Usage(
            "the tile is encrypted; an AES-256-GCM key is needed".into(),
        ));
    };
    let (header, start) = md.read_view::<Aes256GcmMetadataView<'_>>(())?;
    let n_metadata = header.md_parts().len();
    let records = || {
        header
            .md_parts()
            .iter()
            .chain(header.data_parts().iter())
            .map(|r| r.map_err(|e| md.fault(start, e)))
    };
    let mut metadata_len = 0usize;
    let mut data_len = 0usize;
    let mut encrypted_len = 0usize;
    for (i, r) in records().enumerate() {
        let r = r?;
        let (plain, encrypted) = (r.plain_len() as usize, r.encrypted_len() as usize);
        if plain != encrypted {
            return corrupt_part(
                &format!("part {i}"),
                Cause::Inconsistent {
                    what: "the ciphertext size",
                    expected: plain as u64,
                    found: encrypted as u64,
                },
            );
        }
        if i < n_metadata {
            metadata_len += plain;
        } else {
            data_len += plain;
        }
        encrypted_len = encrypted_len.saturating_add(encrypted);
    }
    if encrypted_len > data.len() || metadata_len > data.len() {
        return corrupt(Cause::Truncated {
            needed: encrypted_len.max(metadata_len) as u64,
            available: data.len() as u64,
        });
    }
    let mut metadata = vec![0u8; metadata_len];
    let output = out.alloc(data_len)?;
    let (mut pos, mut md_pos, mut data_pos) = (0usize, 0usize, 0usize);
    for (i, r) in records().enumerate() {
        let r = r?;
        let size = r.plain_len() as usize;
        let nonce = Nonce::from_slice(r.iv());
        let tag = Tag::from_slice(r.tag());
        let target = if i < n_metadata {
            md_pos += size;
            &mut metadata[md_pos - size..md_pos]
        } else {
            data_pos += size;
            &mut output[data_pos - size..data_pos]
        };
        target.copy_from_slice(&data[pos..pos + size]);
        cipher
            .decrypt_in_place_detached(nonce, b"", target, tag)
            .map_err(|_| {
                Fault::corrupt(Cause::Unauthentic {
                    algorithm: "AES-256-GCM",
                    part: i as u64,
                })
            })?;
        pos += size;
    }
    Ok(MetadataOut::New(metadata))
}
