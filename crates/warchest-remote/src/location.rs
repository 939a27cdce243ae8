//! Parsing URLs into a store and a key, and making the stores (one per
//! bucket, kept for the process so that connections are reused).

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, OnceLock};

use object_store::path::Path;
use object_store::{ClientOptions, ObjectStore, RetryConfig};

use crate::Options;

/// The kind of store a URL names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `s3://`: Amazon S3 or an S3-compatible endpoint (`AWS_ENDPOINT_URL`).
    S3,
    /// `gs://`: Google Cloud Storage.
    Gcs,
    /// `az://`, `azure://`, `abfs[s]://` or an `https://…blob.core.windows.net` URL.
    Azure,
    /// `http://` or `https://`: any server that answers range requests.
    Http,
}

/// Whether `name` is a URL this crate opens (rather than a local path).
pub fn is_remote(name: &str) -> bool {
    let lower = |p: &str| {
        name.len() >= p.len() && name.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes())
    };
    [
        "s3://", "s3a://", "gs://", "az://", "azure://", "abfs://", "abfss://", "http://",
        "https://",
    ]
    .iter()
    .any(|p| lower(p))
}

/// An object (or a prefix) in a store: the URL as given, the store and the
/// key in it.
#[derive(Clone)]
pub struct Location {
    url: String,
    scheme: Scheme,
    /// `scheme://authority`, to which listed keys are appended.
    base: String,
    path: Path,
    store: Arc<dyn ObjectStore>,
    /// What names the store (its bucket, container or server) among the
    /// stores made, and the options it was made with: the store for
    /// uploads is made from them when first asked for
    /// ([`Location::write_store`]).
    store_key: String,
    opts: Options,
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Location")
            .field("url", &self.url)
            .field("scheme", &self.scheme)
            .finish()
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url)
    }
}

fn invalid(url: &str, why: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("{url}: {why}"))
}

impl Location {
    /// Parses `url` and makes (or reuses) the client for its bucket, with
    /// credentials from the environment (docs/remote.md).
    pub fn parse(url: &str) -> io::Result<Location> {
        Location::parse_with(url, &Options::from_env())
    }

    /// [`Location::parse`] with `opts` for the client (timeouts, the
    /// upload retries) instead of those of the environment. The clients
    /// are made once per bucket: the first options for a bucket stay.
    pub fn parse_with(url: &str, opts: &Options) -> io::Result<Location> {
        let parsed = url::Url::parse(url).map_err(|e| invalid(url, e))?;
        let scheme = match parsed.scheme() {
            "s3" | "s3a" => Scheme::S3,
            "gs" => Scheme::Gcs,
            "az" | "azure" | "abfs" | "abfss" => Scheme::Azure,
            "http" | "https" => match parsed.host_str() {
                Some(h)
                    if h.ends_with(".blob.core.windows.net")
                        || h.ends_with(".dfs.core.windows.net") =>
                {
                    Scheme::Azure
                }
                _ => Scheme::Http,
            },
            s => return Err(invalid(url, format!("unknown URL scheme {s:?}"))),
        };
        if parsed.query().is_some() && scheme != Scheme::Http {
            return Err(invalid(url, "a query string is not part of an object key"));
        }
        let host = parsed
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| invalid(url, "no bucket or host"))?;
        let raw_path = parsed.path().trim_start_matches('/');
        // Azure URLs name the container in the host (abfs: CONTAINER@ACCOUNT)
        // or in the first path segment (https://ACCOUNT.blob...); the store
        // is then per container and the key is what follows.
        let (store_key, base, key) = match (scheme, parsed.scheme()) {
            (Scheme::Azure, "http" | "https") => {
                let (container, rest) = raw_path.split_once('/').unwrap_or((raw_path, ""));
                let base = format!("{}://{}/{}", parsed.scheme(), host, container);
                (base.clone(), base, rest.to_string())
            }
            (Scheme::Azure, "abfs" | "abfss") => {
                let user = parsed.username();
                let base = if user.is_empty() {
                    format!("{}://{}", parsed.scheme(), host)
                } else {
                    format!("{}://{}@{}", parsed.scheme(), user, host)
                };
                (base.clone(), base, raw_path.to_string())
            }
            (Scheme::Http, _) => {
                let base = match parsed.port() {
                    Some(p) => format!("{}://{}:{}", parsed.scheme(), host, p),
                    None => format!("{}://{}", parsed.scheme(), host),
                };
                (base.clone(), base, raw_path.to_string())
            }
            _ => {
                let base = format!("{}://{}", parsed.scheme(), host);
                (base.clone(), base, raw_path.to_string())
            }
        };
        let path = Path::from_url_path(&key).map_err(|e| invalid(url, e))?;
        let store = store_for(scheme, &store_key, false, opts).map_err(|e| invalid(url, e))?;
        Ok(Location {
            url: url.to_string(),
            scheme,
            base,
            path,
            store,
            store_key,
            opts: opts.clone(),
        })
    }

    /// The URL as given.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The kind of store.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The key in the store.
    pub fn key(&self) -> &Path {
        &self.path
    }

    /// The location of `key` in the same store.
    pub(crate) fn with_key(&self, key: Path) -> Location {
        Location {
            url: format!("{}/{}", self.base, key),
            path: key,
            ..self.clone()
        }
    }

    pub(crate) fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The same store with object_store's own retries, for uploads (reads
    /// retry in this crate, which resumes a range where it stopped). Made
    /// on first use, not with the reading store: each client loads the
    /// system's trust store (about 300 files, a few ms before the first
    /// request), which a command that only reads paid twice.
    pub(crate) fn write_store(&self) -> io::Result<Arc<dyn ObjectStore>> {
        store_for(self.scheme, &self.store_key, true, &self.opts).map_err(|e| invalid(&self.url, e))
    }
}

type Stores = Mutex<HashMap<(Scheme, String, bool), Arc<dyn ObjectStore>>>;

/// The stores made so far, by scheme, bucket (container, server) and
/// whether for uploads.
fn stores() -> &'static Stores {
    static STORES: OnceLock<Stores> = OnceLock::new();
    STORES.get_or_init(Default::default)
}

/// The store for one bucket (container, server), made once.
fn store_for(
    scheme: Scheme,
    key: &str,
    writing: bool,
    opts: &Options,
) -> object_store::Result<Arc<dyn ObjectStore>> {
    let stores = stores();
    let id = (scheme, key.to_string(), writing);
    if let Some(s) = stores.lock().unwrap_or_else(|e| e.into_inner()).get(&id) {
        return Ok(s.clone());
    }
    let s = make_store(scheme, key, writing, opts)?;
    stores
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, s.clone());
    Ok(s)
}

fn env_set(names: &[&str]) -> bool {
    names
        .iter()
        .any(|n| std::env::var_os(n).is_some_and(|v| !v.is_empty()))
}

fn env_true(name: &str) -> bool {
    std::env::var(name)
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

fn make_store(
    scheme: Scheme,
    key: &str,
    writing: bool,
    opts: &Options,
) -> object_store::Result<Arc<dyn ObjectStore>> {
    crate::install_crypto();
    let mut client = ClientOptions::new()
        .with_connect_timeout(opts.connect_timeout)
        // Stalls are timed per read in this crate; a whole large range
        // may take longer than any fixed limit.
        .with_timeout_disabled();
    let retry = if writing {
        RetryConfig {
            max_retries: opts.retries as usize,
            retry_timeout: opts.timeout.saturating_mul(opts.retries.max(1)),
            backoff: object_store::BackoffConfig {
                init_backoff: opts.backoff,
                max_backoff: opts.max_backoff,
                base: 2.0,
            },
        }
    } else {
        RetryConfig {
            max_retries: 0,
            retry_timeout: opts.timeout,
            ..Default::default()
        }
    };
    if writing {
        client = client.with_timeout(opts.timeout.saturating_mul(10));
    }
    Ok(match scheme {
        Scheme::S3 => {
            use object_store::aws::AmazonS3Builder;
            let bucket = key.split_once("://").map_or(key, |(_, b)| b);
            let endpoint = std::env::var("AWS_ENDPOINT_URL")
                .or_else(|_| std::env::var("AWS_ENDPOINT"))
                .ok();
            if env_true("AWS_ALLOW_HTTP")
                || endpoint
                    .as_deref()
                    .is_some_and(|e| e.starts_with("http://"))
            {
                client = client.with_allow_http(true);
            }
            let mut b = AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .with_client_options(client)
                .with_retry(retry);
            if !writing {
                b = b.with_http_connector(plain_connector(opts));
            }
            if let Some(e) = endpoint {
                b = b.with_endpoint(e);
            }
            // Without credentials, public buckets are read unsigned rather
            // than asking an instance metadata service for some.
            if env_true("AWS_SKIP_SIGNATURE")
                || !env_set(&[
                    "AWS_ACCESS_KEY_ID",
                    "AWS_WEB_IDENTITY_TOKEN_FILE",
                    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                ])
            {
                b = b.with_skip_signature(true);
            }
            Arc::new(b.build()?)
        }
        Scheme::Gcs => {
            use object_store::gcp::GoogleCloudStorageBuilder;
            let bucket = key.split_once("://").map_or(key, |(_, b)| b);
            let mut b = GoogleCloudStorageBuilder::from_env()
                .with_bucket_name(bucket)
                .with_client_options(client)
                .with_retry(retry);
            let adc = std::env::var_os("HOME").is_some_and(|h| {
                std::path::Path::new(&h)
                    .join(".config/gcloud/application_default_credentials.json")
                    .exists()
            });
            if !adc
                && !env_set(&[
                    "GOOGLE_APPLICATION_CREDENTIALS",
                    "GOOGLE_SERVICE_ACCOUNT",
                    "GOOGLE_SERVICE_ACCOUNT_PATH",
                    "GOOGLE_SERVICE_ACCOUNT_KEY",
                ])
            {
                b = b.with_skip_signature(true);
            }
            Arc::new(b.build()?)
        }
        Scheme::Azure => {
            use object_store::azure::MicrosoftAzureBuilder;
            let mut b = MicrosoftAzureBuilder::from_env()
                .with_url(key)
                .with_client_options(client)
                .with_retry(retry);
            if !env_set(&[
                "AZURE_STORAGE_ACCOUNT_KEY",
                "AZURE_STORAGE_ACCESS_KEY",
                "AZURE_STORAGE_KEY",
                "AZURE_STORAGE_SAS_KEY",
                "AZURE_STORAGE_SAS_TOKEN",
                "AZURE_STORAGE_TOKEN",
                "AZURE_CLIENT_SECRET",
                "AZURE_FEDERATED_TOKEN_FILE",
                "AZURE_STORAGE_USE_EMULATOR",
                "AZURE_USE_AZURE_CLI",
            ]) {
                b = b.with_skip_signature(true);
            }
            Arc::new(b.build()?)
        }
        Scheme::Http => {
            use object_store::http::HttpBuilder;
            let mut b = HttpBuilder::new()
                .with_url(key)
                .with_client_options(client.with_allow_http(true))
                .with_retry(retry);
            if !writing {
                b = b.with_http_connector(plain_connector(opts));
            }
            Arc::new(b.build()?)
        }
    })
}

/// The transport of a reading store: hyper with a capped read buffer for
/// plain-`http://` GETs and HEADs, reqwest for the rest (crate::plain).
fn plain_connector(opts: &Options) -> crate::plain::PlainConnector {
    crate::plain::PlainConnector {
        connect_timeout: opts.connect_timeout,
        read_buf: opts.read_buf,
    }
}

/// Whether `name` (the last component of a key) matches `pattern`, where
/// `*` is any run of characters and `?` any one.
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative matching with one backtrack point: linear in practice and
    // never recursive, whatever the pattern.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("*.warc.gz", "a.warc.gz"));
        assert!(glob_match("CC-*-0000?.warc.gz", "CC-MAIN-x-00001.warc.gz"));
        assert!(!glob_match("*.warc.gz", "a.warc"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("a?", "a"));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXbYY"));
    }

    #[test]
    fn remote_names() {
        assert!(is_remote("s3://b/k"));
        assert!(is_remote("HTTPS://h/x"));
        assert!(is_remote("gs://b/"));
        assert!(!is_remote("/tmp/s3://x"));
        assert!(!is_remote("file.warc.gz"));
        assert!(!is_remote("-"));
    }

    /// Reading makes one client; the upload client (another trust store
    /// loaded) is made only when asked for.
    #[test]
    fn the_upload_client_is_made_only_when_asked_for() {
        let made = |writing: bool| {
            let id = (Scheme::Http, "http://127.0.0.1:7".to_string(), writing);
            stores().lock().unwrap().contains_key(&id)
        };
        let l = Location::parse("http://127.0.0.1:7/lazy/x.warc.gz").unwrap();
        assert!(made(false));
        assert!(!made(true));
        l.write_store().unwrap();
        assert!(made(true));
    }

    #[test]
    fn parses() {
        let l = Location::parse("s3://bucket/crawl/a%20b.warc.gz").unwrap();
        assert_eq!(l.scheme(), Scheme::S3);
        assert_eq!(l.key().as_ref(), "crawl/a b.warc.gz");
        let l = Location::parse("http://127.0.0.1:9/x/y.warc").unwrap();
        assert_eq!(l.scheme(), Scheme::Http);
        assert_eq!(l.key().as_ref(), "x/y.warc");
        assert_eq!(
            l.with_key(Path::from("x/z")).url(),
            "http://127.0.0.1:9/x/z"
        );
        let e = Location::parse("ftp://h/x").unwrap_err();
        assert!(e.to_string().contains("ftp://h/x"), "{e}");
        assert!(Location::parse("s3:///key").is_err());
    }
}
