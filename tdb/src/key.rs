//! The AES-256-GCM key of an encrypted array, from wherever a person keeps
//! it: `--key`, `--key-file`, or the `TDB_KEY` environment variable — so it
//! need not appear in a shell history or a process listing.

use std::path::PathBuf;

/// The environment variable read when neither option is given.
pub const KEY_ENV: &str = "TDB_KEY";

/// The key options every command that opens an array takes.
#[derive(clap::Args, Debug, Default)]
pub struct KeyArgs {
    /// The 32-byte key of an encrypted array: 32 characters or 64
    /// hexadecimal digits (also read from the TDB_KEY environment variable).
    #[arg(long, conflicts_with = "key_file")]
    pub key: Option<String>,
    /// A file holding the key (32 bytes, or 64 hexadecimal digits; a final
    /// newline is ignored).
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
}

impl KeyArgs {
    /// The key, if one was given: `--key`, else `--key-file`, else `TDB_KEY`.
    pub fn resolve(&self) -> Result<Option<[u8; 32]>, String> {
        if let Some(text) = &self.key {
            return parse_key(text.as_bytes())
                .map(Some)
                .map_err(|e| format!("--key: {e}"));
        }
        if let Some(path) = &self.key_file {
            let bytes =
                std::fs::read(path).map_err(|e| format!("--key-file {}: {e}", path.display()))?;
            let trimmed = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
            let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
            return parse_key(trimmed)
                .map(Some)
                .map_err(|e| format!("--key-file {}: {e}", path.display()));
        }
        match std::env::var_os(KEY_ENV) {
            Some(value) if !value.is_empty() => {
                let text = value.into_encoded_bytes();
                parse_key(&text)
                    .map(Some)
                    .map_err(|e| format!("{KEY_ENV}: {e}"))
            }
            _ => Ok(None),
        }
    }
}

/// 32 bytes taken as they are, or 64 hexadecimal digits.
pub fn parse_key(bytes: &[u8]) -> Result<[u8; 32], String> {
    if let Ok(key) = <[u8; 32]>::try_from(bytes) {
        return Ok(key);
    }
    if bytes.len() == 64 {
        let mut key = [0u8; 32];
        for (slot, pair) in key.iter_mut().zip(bytes.chunks_exact(2)) {
            let digits = std::str::from_utf8(pair).map_err(|_| "the key is not hexadecimal")?;
            *slot = u8::from_str_radix(digits, 16).map_err(|_| "the key is not hexadecimal")?;
        }
        return Ok(key);
    }
    Err(format!(
        "a key is 32 bytes or 64 hexadecimal digits, not {} bytes",
        bytes.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::parse_key;

    #[test]
    fn raw_and_hexadecimal_keys() {
        let raw = parse_key(b"0123456789abcdef0123456789abcdef").unwrap();
        assert_eq!(&raw, b"0123456789abcdef0123456789abcdef");
        let hex = parse_key(&b"41".repeat(32)).unwrap();
        assert_eq!(hex, [0x41; 32]);
        assert!(parse_key(b"short").unwrap_err().contains("not 5 bytes"));
        assert!(parse_key(&b"zz".repeat(32))
            .unwrap_err()
            .contains("hexadecimal"));
    }
}
