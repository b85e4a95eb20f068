//! s3s-fs, with the three operations where it parts from S3 (or is slower
//! than the clients it serves) done here:
//!
//! - A GET's body: s3s-fs streams it through tokio's file in 4 KiB reads,
//!   each a trip to tokio's blocking pool, about 100 MB/s, slower than
//!   either client, so every large read would measure the server. Here the
//!   same bytes are read with one `pread` on a blocking thread.
//! - A suffix range longer than the object (`bytes=-N`): S3 answers the
//!   whole object; s3s-fs answers 500.
//! - ListObjectsV2: s3s-fs walks the whole bucket for every page, and cuts
//!   a common prefix one byte after the start of the delimiter, so a
//!   delimiter longer than one byte (`.wrt`, which both TileDB's and our
//!   listing of `__commits/` may use) folds names where S3 would not. Here
//!   a listing walks only the folder the prefix names (only one level of it
//!   with `/` as the delimiter) and folds at the whole delimiter.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use s3s::dto::{self, StreamingBlob};
use s3s::{s3_error, S3Request, S3Response, S3Result, S3};
use s3s_fs::FileSystem;

/// The benchmark's S3 backend: s3s-fs over `root`.
pub struct Backend {
    fs: FileSystem,
    root: PathBuf,
}

impl Backend {
    pub fn new(fs: FileSystem, root: PathBuf) -> Self {
        Self { fs, root }
    }
}

/// Forwards one S3 operation to s3s-fs unchanged.
macro_rules! forward {
    ($($name:ident: $input:ident => $output:ident;)*) => {
        $(
            fn $name<'a, 'b>(
                &'a self,
                request: S3Request<dto::$input>,
            ) -> std::pin::Pin<
                Box<dyn std::future::Future<Output = S3Result<S3Response<dto::$output>>> + Send + 'b>,
            >
            where
                'a: 'b,
                Self: 'b,
            {
                self.fs.$name(request)
            }
        )*
    };
}

#[async_trait::async_trait]
impl S3 for Backend {
    forward! {
        create_bucket: CreateBucketInput => CreateBucketOutput;
        delete_bucket: DeleteBucketInput => DeleteBucketOutput;
        head_bucket: HeadBucketInput => HeadBucketOutput;
        list_buckets: ListBucketsInput => ListBucketsOutput;
        get_bucket_location: GetBucketLocationInput => GetBucketLocationOutput;
        head_object: HeadObjectInput => HeadObjectOutput;
        put_object: PutObjectInput => PutObjectOutput;
        copy_object: CopyObjectInput => CopyObjectOutput;
        delete_object: DeleteObjectInput => DeleteObjectOutput;
        delete_objects: DeleteObjectsInput => DeleteObjectsOutput;
        list_objects: ListObjectsInput => ListObjectsOutput;
        create_multipart_upload: CreateMultipartUploadInput => CreateMultipartUploadOutput;
        upload_part: UploadPartInput => UploadPartOutput;
        list_parts: ListPartsInput => ListPartsOutput;
        complete_multipart_upload: CompleteMultipartUploadInput => CompleteMultipartUploadOutput;
        abort_multipart_upload: AbortMultipartUploadInput => AbortMultipartUploadOutput;
    }

    async fn get_object(
        &self,
        mut request: S3Request<dto::GetObjectInput>,
    ) -> S3Result<S3Response<dto::GetObjectOutput>> {
        let path = self
            .root
            .join(&request.input.bucket)
            .join(&request.input.key);
        // S3 answers `bytes=-N` with the whole object when N is more than
        // its length. s3s-fs bounds the range, then seeks N bytes back from
        // the end, fails and answers 500, which clients retry. The request
        // is authenticated by now (its signature covers the Range header),
        // so the parsed range can be bounded here.
        if let Some(dto::Range::Suffix { length }) = request.input.range {
            if let Ok(size) = std::fs::metadata(&path).map(|m| m.len()) {
                if length > size {
                    request.input.range = Some(dto::Range::Int {
                        first: 0,
                        last: None,
                    });
                }
            }
        }
        // s3s-fs answers everything but the body: headers, errors, ETag.
        let mut response = self.fs.get_object(request).await?;
        let output = &mut response.output;
        let length = output.content_length.unwrap_or(0);
        let first = match output.content_range.as_deref() {
            // "bytes FIRST-LAST/SIZE"
            Some(range) => range
                .strip_prefix("bytes ")
                .and_then(|r| r.split('-').next())
                .and_then(|first| first.parse::<u64>().ok())
                .ok_or_else(|| s3_error!(InternalError, "unparsed Content-Range {range}"))?,
            None => 0,
        };
        let length = usize::try_from(length).map_err(|_| s3_error!(InvalidRange))?;
        let body = tokio::task::spawn_blocking(move || -> std::io::Result<Vec<u8>> {
            let file = std::fs::File::open(path)?;
            let mut bytes = vec![0; length];
            file.read_exact_at(&mut bytes, first)?;
            Ok(bytes)
        })
        .await
        .map_err(|e| s3_error!(InternalError, "{e}"))?
        .map_err(|e| s3_error!(InternalError, "{e}"))?;
        output.body = Some(StreamingBlob::from(s3s::Body::from(Bytes::from(body))));
        Ok(response)
    }

    async fn list_objects_v2(
        &self,
        request: S3Request<dto::ListObjectsV2Input>,
    ) -> S3Result<S3Response<dto::ListObjectsV2Output>> {
        let input = request.input;
        let bucket = self.root.join(&input.bucket);
        if !bucket.is_dir() {
            return Err(s3_error!(NoSuchBucket));
        }
        let prefix = input.prefix.clone().unwrap_or_default();
        if prefix.split('/').any(|part| part == "..") {
            return Err(s3_error!(InvalidArgument, "prefix"));
        }
        let delimiter = input.delimiter.clone().filter(|d| !d.is_empty());
        let listed =
            tokio::task::spawn_blocking(move || list(&bucket, &prefix, delimiter.as_deref()))
                .await
                .map_err(|e| s3_error!(InternalError, "{e}"))?
                .map_err(|e| s3_error!(InternalError, "{e}"))?;
        let marker = match (
            input.continuation_token.as_deref(),
            input.start_after.as_deref(),
        ) {
            (Some(token), Some(after)) => Some(token.max(after)),
            (token, after) => token.or(after),
        };
        let max_keys = usize::try_from(input.max_keys.unwrap_or(1000)).unwrap_or(1000);
        let after_marker = listed
            .iter()
            .skip_while(|entry| marker.is_some_and(|m| entry.key.as_str() <= m));
        let page: Vec<&Listed> = after_marker.clone().take(max_keys).collect();
        let truncated = after_marker.count() > page.len();
        let mut contents = Vec::new();
        let mut common_prefixes = Vec::new();
        for entry in &page {
            match &entry.object {
                Some((size, modified)) => contents.push(dto::Object {
                    key: Some(entry.key.clone()),
                    size: Some(i64::try_from(*size).unwrap_or(i64::MAX)),
                    last_modified: Some(dto::Timestamp::from(*modified)),
                    ..Default::default()
                }),
                None => common_prefixes.push(dto::CommonPrefix {
                    prefix: Some(entry.key.clone()),
                }),
            }
        }
        let output = dto::ListObjectsV2Output {
            key_count: Some(i32::try_from(page.len()).unwrap_or(i32::MAX)),
            max_keys: input.max_keys.or(Some(1000)),
            is_truncated: Some(truncated),
            next_continuation_token: truncated
                .then(|| page.last().map(|entry| entry.key.clone()))
                .flatten(),
            contents: (!contents.is_empty()).then_some(contents),
            common_prefixes: (!common_prefixes.is_empty()).then_some(common_prefixes),
            continuation_token: input.continuation_token,
            delimiter: input.delimiter,
            encoding_type: input.encoding_type,
            name: Some(input.bucket),
            prefix: input.prefix,
            start_after: input.start_after,
            ..Default::default()
        };
        Ok(S3Response::new(output))
    }
}

/// One entry of a listing: an object (its size and modification time) or
/// a common prefix (`object` none).
struct Listed {
    key: String,
    object: Option<(u64, std::time::SystemTime)>,
}

/// Every object of the bucket folder `bucket` whose key starts with
/// `prefix`, folded at `delimiter` as S3 folds: a key with the delimiter
/// after the prefix is its common prefix up to the delimiter's end. In key
/// order (S3's: by UTF-8 bytes), without repeats.
fn list(bucket: &Path, prefix: &str, delimiter: Option<&str>) -> std::io::Result<Vec<Listed>> {
    // The folder every key with this prefix lies in.
    let folder_key = &prefix[..prefix.rfind('/').map_or(0, |at| at + 1)];
    let mut listed = Vec::new();
    let mut folders = vec![folder_key.to_owned()];
    while let Some(folder) = folders.pop() {
        let entries = match std::fs::read_dir(bucket.join(&folder)) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let key = format!("{folder}{name}");
            let kind = entry.file_type()?;
            if kind.is_dir() {
                let below = format!("{key}/");
                // Only folders that can hold a key with the prefix.
                if !(below.starts_with(prefix) || prefix.starts_with(&below)) {
                    continue;
                }
                if delimiter == Some("/") && below.starts_with(prefix) {
                    // One level: the folder is a common prefix if it holds
                    // an object (S3 has no empty folders).
                    if holds_an_object(&bucket.join(&key))? {
                        listed.push(Listed {
                            key: below,
                            object: None,
                        });
                    }
                } else {
                    folders.push(below);
                }
                continue;
            }
            let Some(rest) = key.strip_prefix(prefix) else {
                continue;
            };
            match delimiter.and_then(|d| rest.find(d).map(|at| at + d.len())) {
                Some(end) => listed.push(Listed {
                    key: format!("{prefix}{}", &rest[..end]),
                    object: None,
                }),
                None => {
                    let metadata = entry.metadata()?;
                    listed.push(Listed {
                        key,
                        object: Some((metadata.len(), metadata.modified()?)),
                    });
                }
            }
        }
    }
    listed.sort_by(|a, b| a.key.cmp(&b.key));
    listed.dedup_by(|a, b| a.key == b.key);
    Ok(listed)
}

/// Whether the folder `path` holds a file at any depth.
fn holds_an_object(path: &Path) -> std::io::Result<bool> {
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        if !entry.file_type()?.is_dir() || holds_an_object(&entry.path())? {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bucket folder holding `keys` (each a file of one byte).
    fn bucket(keys: &[&str]) -> PathBuf {
        let root = std::env::temp_dir().join(format!(
            "tiledb-bench-s3-list-{}-{}",
            std::process::id(),
            keys.len()
        ));
        let _ = std::fs::remove_dir_all(&root);
        for key in keys {
            let path = root.join(key);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, b"x").unwrap();
        }
        root
    }

    fn keys(listed: &[Listed]) -> Vec<(&str, bool)> {
        listed
            .iter()
            .map(|l| (l.key.as_str(), l.object.is_some()))
            .collect()
    }

    #[test]
    fn listings_fold_as_s3_folds() {
        let root = bucket(&[
            "a/__commits/__1_1_u1_22.wrt",
            "a/__commits/__2_2_u2_22.wrt",
            "a/__commits/__1_2_u3_22.con",
            "a/__commits/x.wrt.tmp",
            "a/__fragments/f1/a0.tdb",
            "a/__schema/s1",
            "a/top",
            "b/z",
        ]);
        // At the whole delimiter, not at its first byte.
        let commits = list(&root, "a/__commits/", Some(".wrt")).unwrap();
        assert_eq!(
            keys(&commits),
            [
                ("a/__commits/__1_1_u1_22.wrt", false),
                ("a/__commits/__1_2_u3_22.con", true),
                ("a/__commits/__2_2_u2_22.wrt", false),
                ("a/__commits/x.wrt", false),
            ]
        );
        // One level under '/', folders as common prefixes.
        let top = list(&root, "a/", Some("/")).unwrap();
        assert_eq!(
            keys(&top),
            [
                ("a/__commits/", false),
                ("a/__fragments/", false),
                ("a/__schema/", false),
                ("a/top", true),
            ]
        );
        // A prefix that ends inside a name.
        let partial = list(&root, "a/__f", Some("/")).unwrap();
        assert_eq!(keys(&partial), [("a/__fragments/", false)]);
        // No delimiter: every key below, in byte order.
        let all = list(&root, "", None).unwrap();
        assert_eq!(all.len(), 8);
        assert!(all.windows(2).all(|w| w[0].key < w[1].key));
        // A folder with no object in it is not listed (S3 has none).
        std::fs::create_dir_all(root.join("a/empty/deeper")).unwrap();
        let top = list(&root, "a/", Some("/")).unwrap();
        assert!(!top.iter().any(|l| l.key == "a/empty/"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
