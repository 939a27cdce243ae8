//! TLS for captures (rustls with the `ring` provider): the client side, with
//! the Mozilla trust store or without verification (`--insecure`, which
//! archivists need for expired and self-signed sites), and the proxy's
//! certificate authority, which signs a certificate per host on the fly.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, ServerConfig, SignatureScheme};

use super::CaptureError;

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn tls_err(e: impl std::fmt::Display) -> CaptureError {
    CaptureError::Tls(e.to_string())
}

/// A client configuration: the webpki (Mozilla) roots plus `extra_roots`
/// (PEM files), or, when `insecure`, any certificate accepted.
///
/// # Errors
/// An unreadable or invalid PEM file.
pub fn client_config(
    insecure: bool,
    extra_roots: &[&Path],
) -> Result<Arc<ClientConfig>, CaptureError> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(tls_err)?;
    let cfg = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider())))
            .with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for p in extra_roots {
            for c in read_certs(p)? {
                roots.add(c).map_err(tls_err)?;
            }
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    Ok(Arc::new(cfg))
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, CaptureError> {
    use rustls::pki_types::pem::PemObject;
    let text = std::fs::read(path).map_err(|e| CaptureError::Io(path.display().to_string(), e))?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<_, _>>()
        .map_err(|e| tls_err(format!("{}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(tls_err(format!("{}: no certificate", path.display())));
    }
    Ok(certs)
}

/// The name to verify for `host` (a DNS name or an IP literal).
///
/// # Errors
/// A host that is neither.
pub fn server_name(host: &str) -> Result<ServerName<'static>, CaptureError> {
    ServerName::try_from(host.to_string()).map_err(|e| tls_err(format!("{host}: {e}")))
}

/// `tls/1.3` and the cipher suite's IANA name, for WARC-Protocol and
/// WARC-Cipher-Suite.
pub fn describe(conn: &rustls::CommonState) -> (Option<String>, Option<String>) {
    let proto = conn.protocol_version().map(|v| match v {
        rustls::ProtocolVersion::TLSv1_3 => "tls/1.3".to_string(),
        rustls::ProtocolVersion::TLSv1_2 => "tls/1.2".to_string(),
        other => format!("tls/{other:?}").to_ascii_lowercase(),
    });
    let suite = conn.negotiated_cipher_suite().map(|s| {
        let s = s.suite().as_str().unwrap_or("unknown");
        // rustls spells TLS 1.3 suites TLS13_...; IANA's names are TLS_...
        match s.strip_prefix("TLS13_") {
            Some(rest) => format!("TLS_{rest}"),
            None => s.to_string(),
        }
    });
    (proto, suite)
}

#[derive(Debug)]
struct AcceptAny(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A certificate authority that signs a server certificate per host, for
/// the recording proxy's HTTPS interception (CONNECT). Its certificate and
/// key are kept in one PEM file, made on first use.
pub struct CertAuthority {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    cert_pem: String,
    // Sent after each host's certificate: a client that pins the CA's key
    // (Chromium's --ignore-certificate-errors-spki-list) finds it in the
    // chain the server presents.
    cert_der: CertificateDer<'static>,
    cache: Mutex<HashMap<String, Arc<ServerConfig>>>,
}

impl CertAuthority {
    /// Loads the CA from `path` (certificate and private key, PEM), or
    /// generates one and writes it there when the file does not exist.
    ///
    /// # Errors
    /// The file cannot be read, parsed or written.
    pub fn load_or_create(path: &Path) -> Result<CertAuthority, CaptureError> {
        let io = |e| CaptureError::Io(path.display().to_string(), e);
        if path.exists() {
            let text = std::fs::read_to_string(path).map_err(io)?;
            let key = rcgen::KeyPair::from_pem(&text).map_err(tls_err)?;
            let start = text
                .find("-----BEGIN CERTIFICATE-----")
                .ok_or_else(|| tls_err(format!("{}: no certificate", path.display())))?;
            let end = text[start..]
                .find("-----END CERTIFICATE-----")
                .map(|e| start + e + "-----END CERTIFICATE-----".len())
                .ok_or_else(|| tls_err(format!("{}: unterminated certificate", path.display())))?;
            let cert_pem = format!("{}\n", &text[start..end]);
            use rustls::pki_types::pem::PemObject;
            let cert_der = CertificateDer::from_pem_slice(cert_pem.as_bytes())
                .map_err(|e| tls_err(format!("{}: {e}", path.display())))?;
            // The issuer is the CA's name and key; the certificate itself
            // need not be parsed, since warchest made it with these params.
            let issuer = rcgen::Issuer::new(ca_params(), key);
            return Ok(CertAuthority {
                issuer,
                cert_pem,
                cert_der,
                cache: Mutex::new(HashMap::new()),
            });
        }
        let params = ca_params();
        let key = rcgen::KeyPair::generate().map_err(tls_err)?;
        let cert = params.self_signed(&key).map_err(tls_err)?;
        let cert_pem = cert.pem();
        let cert_der = cert.der().clone();
        let text = format!("{}{}", key.serialize_pem(), cert_pem);
        write_private(path, text.as_bytes()).map_err(io)?;
        Ok(CertAuthority {
            issuer: rcgen::Issuer::new(params, key),
            cert_pem,
            cert_der,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The CA certificate, PEM, for clients to trust.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA's SubjectPublicKeyInfo (DER): its SHA-256 is what a browser
    /// is told to accept with `--ignore-certificate-errors-spki-list`, so
    /// that it trusts this CA and no other browser does.
    pub fn spki_der(&self) -> Vec<u8> {
        use rcgen::PublicKeyData;
        self.issuer.key().subject_public_key_info()
    }

    /// A server configuration presenting a certificate for `host`, signed
    /// by this CA (made once per host).
    ///
    /// # Errors
    /// Signing failed.
    pub fn server_config(&self, host: &str) -> Result<Arc<ServerConfig>, CaptureError> {
        if let Some(c) = self.cache.lock().ok().and_then(|m| m.get(host).cloned()) {
            return Ok(c);
        }
        let mut params = rcgen::CertificateParams::new(vec![host.to_string()]).map_err(tls_err)?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, host.to_string());
        let key = rcgen::KeyPair::generate().map_err(tls_err)?;
        let cert = params.signed_by(&key, &self.issuer).map_err(tls_err)?;
        let key_der = PrivateKeyDer::try_from(key.serialize_der()).map_err(tls_err)?;
        let cfg = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(tls_err)?
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone(), self.cert_der.clone()], key_der)
            .map_err(tls_err)?;
        let cfg = Arc::new(cfg);
        if let Ok(mut m) = self.cache.lock() {
            // Bounded: a proxy serves a finite set of hosts, but a hostile
            // client could name many; forget them all past a limit.
            if m.len() > 10_000 {
                m.clear();
            }
            m.insert(host.to_string(), cfg.clone());
        }
        Ok(cfg)
    }
}

/// The CA's certificate parameters (fixed, so that a CA file made earlier
/// can sign again with just its key).
fn ca_params() -> rcgen::CertificateParams {
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "warchest proxy CA");
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "warchest");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    params
}

/// A self-signed certificate and key for `names` (tests, local servers):
/// (certificate DER, PKCS#8 key DER, certificate PEM).
///
/// # Errors
/// Generation failed.
pub fn self_signed(names: &[&str]) -> Result<(Vec<u8>, Vec<u8>, String), CaptureError> {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let ck = rcgen::generate_simple_self_signed(names).map_err(tls_err)?;
    Ok((
        ck.cert.der().to_vec(),
        ck.signing_key.serialize_der(),
        ck.cert.pem(),
    ))
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o.open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}
