//! [`open_url`]: the storage a location names, a local path or a URL.
//!
//! `s3://bucket/path`, `gs://bucket/path`, `az://container/path` (also
//! `azure://`, `abfs://`), `http(s)://host/path` (read-only) and
//! `memory://name/path` (an in-memory store shared by every opening of the
//! same name in the process, for tests) open an object storage (`ObjectStorage`)
//! with the `object-store` feature; anything else is a local path. Credentials,
//! region and endpoint come from the environment as `object_store`'s
//! `from_env` builders read it (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ALLOW_HTTP`,
//! `GOOGLE_SERVICE_ACCOUNT`, `AZURE_STORAGE_ACCOUNT_NAME`, …), then from
//! the `key=value` pairs given, which win.

use crate::error::{Error, Result};
use crate::storage::{LocalStorage, Storage};

/// Keys of a location's configuration that this library reads itself
/// (every other key goes to the store's builder, as `object_store` names
/// them: `aws_endpoint`, `aws_region`, `allow_http`, `timeout`, …).
pub mod keys {
    /// Retries of a failed request (default 10; 0 turns retries off).
    pub const RETRY_MAX: &str = "retry_max";
    /// Seconds after the first try of a request past which it is not
    /// retried (default 180).
    pub const RETRY_TIMEOUT_SECS: &str = "retry_timeout_secs";
    /// Requests in flight at once for one batch of ranges (default 16).
    pub const MAX_IN_FLIGHT: &str = "max_in_flight";
    /// Bytes a read fetches ahead of its decoding a window at a time, two
    /// windows at most (default 32 MiB): a file larger than two windows is
    /// never held whole.
    pub const READ_AHEAD: &str = "read_ahead";
}

/// Whether `location` names an object store rather than a local path.
pub fn is_url(location: &str) -> bool {
    match location.split_once("://") {
        Some((scheme, _)) => {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// The storage rooted at `location`: a local folder, or a prefix of an
/// object store named by URL, configured from the environment and then
/// from `config` (`key=value` pairs; see [`keys`]). `file://` URLs are
/// local paths. An unknown scheme, a URL with `.` or `..` segments or a
/// bad configuration key is refused (class usage).
pub fn open_url(location: &str, config: &[(String, String)]) -> Result<Box<dyn Storage>> {
    if let Some(path) = location.strip_prefix("file://") {
        return Ok(Box::new(LocalStorage::new(path)));
    }
    if !is_url(location) {
        return Ok(Box::new(LocalStorage::new(location)));
    }
    open_object_url(location, config)
}

#[cfg(not(feature = "object-store"))]
fn open_object_url(location: &str, _config: &[(String, String)]) -> Result<Box<dyn Storage>> {
    Err(Error::Usage(format!(
        "{location}: object storage needs the `object-store` feature of tiledb-runtime"
    )))
}

#[cfg(feature = "object-store")]
fn open_object_url(location: &str, config: &[(String, String)]) -> Result<Box<dyn Storage>> {
    Ok(Box::new(object_url::open(location, config)?))
}

/// Splits `key=value` arguments (as `tdb --config` takes them) into pairs.
pub fn parse_config(pairs: &[String]) -> Result<Vec<(String, String)>> {
    pairs
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                Ok((key.trim().to_owned(), value.to_owned()))
            }
            _ => Err(Error::Usage(format!(
                "configuration `{pair}`: expected key=value"
            ))),
        })
        .collect()
}

#[cfg(feature = "object-store")]
mod object_url {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    use std::time::Duration;

    use object_store::list::PaginatedListStore;
    use object_store::path::Path as Key;
    use object_store::{ObjectStore, RetryConfig};
    use url::Url;

    use super::keys;
    use crate::error::{Error, Result};
    use crate::storage::object::{ObjectStorage, DEFAULT_MAX_IN_FLIGHT, DEFAULT_READ_AHEAD};

    fn usage(location: &str, what: impl std::fmt::Display) -> Error {
        Error::Usage(format!("{location}: {what}"))
    }

    /// What this library reads of the configuration; the rest is the
    /// store builder's.
    struct Settings {
        retry: RetryConfig,
        max_in_flight: usize,
        read_ahead: u64,
        rest: Vec<(String, String)>,
    }

    fn settings(location: &str, config: &[(String, String)]) -> Result<Settings> {
        let mut settings = Settings {
            retry: RetryConfig::default(),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            read_ahead: DEFAULT_READ_AHEAD,
            rest: Vec::new(),
        };
        let number = |key: &str, value: &str| {
            value.trim().parse::<u64>().map_err(|_| {
                usage(
                    location,
                    format!("`{key}` takes a whole number, not `{value}`"),
                )
            })
        };
        for (key, value) in config {
            match key.as_str() {
                keys::RETRY_MAX => settings.retry.max_retries = number(key, value)? as usize,
                keys::RETRY_TIMEOUT_SECS => {
                    settings.retry.retry_timeout = Duration::from_secs(number(key, value)?);
                }
                keys::MAX_IN_FLIGHT => settings.max_in_flight = number(key, value)? as usize,
                keys::READ_AHEAD => settings.read_ahead = number(key, value)?,
                _ => settings.rest.push((key.clone(), value.clone())),
            }
        }
        Ok(settings)
    }

    /// The in-memory stores by name, for `memory://name/…`.
    fn memory_store(name: &str) -> Arc<dyn ObjectStore> {
        static STORES: OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
        let mut stores = STORES
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(
            stores
                .entry(name.to_owned())
                .or_insert_with(|| Arc::new(object_store::memory::InMemory::new())),
        )
    }

    /// Applies `pairs` to a builder through its `with_config`, refusing
    /// keys it does not know (a typo must not be ignored silently).
    macro_rules! configured {
        ($location:expr, $builder:expr, $key:ty, $pairs:expr) => {{
            let mut builder = $builder;
            for (key, value) in $pairs {
                let parsed: $key = key
                    .parse()
                    .map_err(|_| usage($location, format!("unknown configuration key `{key}`")))?;
                builder = builder.with_config(parsed, value.clone());
            }
            builder
        }};
    }

    fn built<T>(location: &str, built: object_store::Result<T>) -> Result<T> {
        built.map_err(|e| usage(location, e))
    }

    /// The stores built so far, by scheme, bucket (or host) and
    /// configuration: a client (its connection pool, its loaded TLS roots,
    /// its credentials) is built once per process and shared by every
    /// storage opened on it, as opening an array's group members or labels
    /// opens many.
    fn shared_store(key: String, build: impl FnOnce() -> Result<Built>) -> Result<Built> {
        static STORES: OnceLock<Mutex<HashMap<String, Built>>> = OnceLock::new();
        let stores = STORES.get_or_init(Default::default);
        let lock = || {
            stores
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some(store) = lock().get(&key) {
            return Ok(store.clone());
        }
        let store = build()?;
        Ok(lock().entry(key).or_insert(store).clone())
    }

    /// A store, and its paginated listing where we list folded with it
    /// ([`ObjectStorage::with_folded_listings`]).
    #[derive(Clone)]
    struct Built {
        store: Arc<dyn ObjectStore>,
        lister: Option<Arc<dyn PaginatedListStore>>,
    }

    impl From<Arc<dyn ObjectStore>> for Built {
        fn from(store: Arc<dyn ObjectStore>) -> Self {
            Built {
                store,
                lister: None,
            }
        }
    }

    /// The store a URL names, and the key prefix of its root.
    pub(super) fn open(location: &str, config: &[(String, String)]) -> Result<ObjectStorage> {
        let (scheme, rest) = location.split_once("://").unwrap_or_default();
        // The URL parser would resolve `a/../b` silently: refused instead,
        // so a root never names something other than it reads.
        let dot_segment = |segment: &str| {
            let segment = segment.to_ascii_lowercase().replace("%2e", ".");
            segment == "." || segment == ".."
        };
        if rest.split(['/', '?', '#']).skip(1).any(dot_segment) {
            return Err(usage(location, "a URL with `.` or `..` segments"));
        }
        let url = Url::parse(location).map_err(|e| usage(location, e))?;
        let settings = settings(location, config)?;
        let (max_in_flight, read_ahead) = (settings.max_in_flight, settings.read_ahead);
        let prefix = Key::from_url_path(url.path()).map_err(|e| usage(location, e))?;
        let bucket = url.host_str().unwrap_or_default().to_owned();
        let read_only = matches!(scheme, "http" | "https");
        let shared = format!("{scheme}://{bucket}\n{config:?}");
        let built = shared_store(shared, || build(location, scheme, &bucket, &url, settings))?;
        let storage = ObjectStorage::new(built.store, prefix, location)
            .read_only(read_only)
            .with_max_in_flight(max_in_flight)
            .with_read_ahead(read_ahead);
        Ok(match built.lister {
            Some(lister) => storage.with_folded_listings(lister),
            None => storage,
        })
    }

    /// Builds the store of `scheme` for `bucket`.
    fn build(
        location: &str,
        scheme: &str,
        bucket: &str,
        url: &Url,
        settings: Settings,
    ) -> Result<Built> {
        let store: Arc<dyn ObjectStore> = match scheme {
            "s3" | "s3a" => {
                use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
                let builder = AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .with_retry(settings.retry);
                let builder = configured!(location, builder, AmazonS3ConfigKey, &settings.rest);
                let s3 = Arc::new(built(location, builder.build())?);
                // Folded listings on S3 only: its delimiter may be any
                // string, which the tests check against a real server.
                return Ok(Built {
                    store: Arc::clone(&s3) as Arc<dyn ObjectStore>,
                    lister: Some(s3),
                });
            }
            "gs" => {
                use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
                let builder = GoogleCloudStorageBuilder::from_env()
                    .with_bucket_name(bucket)
                    .with_retry(settings.retry);
                let builder = configured!(location, builder, GoogleConfigKey, &settings.rest);
                Arc::new(built(location, builder.build())?)
            }
            "az" | "azure" | "abfs" | "abfss" | "adl" => {
                use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
                let builder = MicrosoftAzureBuilder::from_env()
                    .with_url(location)
                    .with_retry(settings.retry);
                let builder = configured!(location, builder, AzureConfigKey, &settings.rest);
                Arc::new(built(location, builder.build())?)
            }
            "http" | "https" => {
                use object_store::http::HttpBuilder;
                use object_store::ClientConfigKey;
                let origin = url.origin().ascii_serialization();
                let builder = HttpBuilder::new()
                    .with_url(origin)
                    .with_retry(settings.retry);
                let builder = configured!(location, builder, ClientConfigKey, &settings.rest);
                Arc::new(built(location, builder.build())?)
            }
            "memory" => {
                if !settings.rest.is_empty() {
                    return Err(usage(location, "an in-memory store takes no configuration"));
                }
                memory_store(bucket)
            }
            _ => {
                return Err(usage(
                    location,
                    format!("unknown storage scheme `{scheme}://`"),
                ))
            }
        };
        Ok(store.into())
    }
}
