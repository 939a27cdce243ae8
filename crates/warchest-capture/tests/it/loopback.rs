//! The recording proxy's options for tests: loopback only, short
//! timeouts, its certificate authority kept in `ca_dir`. Shared with the
//! browser crate's tests (`#[path]`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use warchest_capture::proxy::{Access, ProxyOptions};
use warchest_capture::{client, tls};

/// Proxy options allowing loopback addresses only.
pub fn loopback_options(ca_dir: &Path) -> ProxyOptions {
    ProxyOptions {
        fetch: client::FetchOptions {
            tls: tls::client_config(false, &[]).unwrap(),
            timeout: Duration::from_secs(5),
            read: client::ReadOptions {
                limits: warchest::write::CaptureLimits::default(),
                digest: warchest::digest::Algorithm::Sha1,
                spool_threshold: warchest_capture::SPOOL_IN_MEMORY,
                max_head: warchest::Limits::default().max_http_head,
            },
        },
        ca: Arc::new(tls::CertAuthority::load_or_create(&ca_dir.join("ca.pem")).unwrap()),
        resolver: Default::default(),
        access: Access {
            allow: vec!["127.0.0.0/8".parse().unwrap()],
            ..Access::default()
        },
    }
}
