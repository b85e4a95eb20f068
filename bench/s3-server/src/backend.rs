//! s3s-fs with GET bodies read in one positioned read.
//!
//! s3s-fs 0.14 streams an object's body through tokio's file in 4 KiB
//! reads, each a trip to tokio's blocking pool: about 100 MB/s, slower than
//! either client it serves, which would make every large read measure the
//! server. Here every operation is s3s-fs's own, but a GET's body is
//! replaced by the same bytes read with one `pread` on a blocking thread.

use std::os::unix::fs::FileExt;
use std::path::PathBuf;

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
        list_objects_v2: ListObjectsV2Input => ListObjectsV2Output;
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
}
