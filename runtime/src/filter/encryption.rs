//! AES-256-GCM (`encryption_aes256gcm_filter.cc`, `crypto_openssl.cc`): every
//! earlier metadata part and then every data part is encrypted on its own
//! with a fresh random 12-byte IV and no associated data; the ciphertext has
//! the plaintext's length. Like a compressor, it consumes the earlier
//! metadata and restores it on the way back.
//!
//! Metadata: `n_metadata_parts u32, n_data_parts u32`, then per part
//! `{plain u32, encrypted u32, iv[12], tag[16]}`.
//! Data: the ciphertexts, metadata parts first.

use aes_gcm::aead::{AeadCore, AeadInPlace, KeyInit, OsRng};
use aes_gcm::{Aes256Gcm, Nonce, Tag};

use super::stage::{corrupt, Cursor, Fault, MetadataOut, OutBuf, Parts, StageEnv, StageResult};

const RECORD: usize = 4 + 4 + 12 + 16;

fn cipher(env: &StageEnv<'_>) -> Option<Aes256Gcm> {
    env.ctx
        .encryption_key
        .map(|key| Aes256Gcm::new(&key.into()))
}

pub(crate) fn forward<'a>(env: &StageEnv<'_>, input: Parts<'a>) -> StageResult<Parts<'a>> {
    let Some(cipher) = cipher(env) else {
        return Err(Fault::Usage("AES-256-GCM needs an encryption key".into()));
    };
    let mut md = Vec::with_capacity(8 + RECORD * (input.metadata.len() + input.data.len()));
    md.extend_from_slice(&(input.metadata.len() as u32).to_le_bytes());
    md.extend_from_slice(&(input.data.len() as u32).to_le_bytes());
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
        md.extend_from_slice(&size.to_le_bytes());
        md.extend_from_slice(&size.to_le_bytes());
        md.extend_from_slice(&nonce);
        md.extend_from_slice(&tag);
    }
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
    let n_metadata = md.u32()? as usize;
    let n_data = md.u32()? as usize;
    let records = md.take(n_metadata.saturating_add(n_data).saturating_mul(RECORD))?;
    let mut metadata_len = 0usize;
    let mut data_len = 0usize;
    let mut encrypted_len = 0usize;
    for (i, r) in records.chunks_exact(RECORD).enumerate() {
        let plain = u32::from_le_bytes([r[0], r[1], r[2], r[3]]) as usize;
        let encrypted = u32::from_le_bytes([r[4], r[5], r[6], r[7]]) as usize;
        if plain != encrypted {
            return corrupt(format!(
                "AES part {i}: plaintext {plain} and ciphertext {encrypted} bytes differ"
            ));
        }
        if i < n_metadata {
            metadata_len += plain;
        } else {
            data_len += plain;
        }
        encrypted_len = encrypted_len.saturating_add(encrypted);
    }
    if encrypted_len > data.len() || metadata_len > data.len() {
        return corrupt(format!(
            "AES parts declare {encrypted_len} bytes, the chunk holds {}",
            data.len()
        ));
    }
    let mut metadata = vec![0u8; metadata_len];
    let output = out.alloc(data_len)?;
    let (mut pos, mut md_pos, mut data_pos) = (0usize, 0usize, 0usize);
    for (i, r) in records.chunks_exact(RECORD).enumerate() {
        let size = u32::from_le_bytes([r[0], r[1], r[2], r[3]]) as usize;
        let nonce = Nonce::from_slice(&r[8..20]);
        let tag = Tag::from_slice(&r[20..36]);
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
                Fault::corrupt(format!(
                    "AES-256-GCM authentication failed on part {i} (wrong key or corrupt data)"
                ))
            })?;
        pos += size;
    }
    Ok(MetadataOut::New(metadata))
}
