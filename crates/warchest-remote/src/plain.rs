//! The transport for reads from plain-`http://` stores: hyper's HTTP/1.1
//! client with a capped read buffer, under object_store (which still
//! builds every request and reads every answer: ranges, statuses, the
//! `Content-Range` checks are its own and this crate's, as before).
//!
//! reqwest, object_store's default transport, lets hyper's read buffer of
//! each connection grow to about 400 KB (8 KiB + 400 KiB), one connection
//! a block in flight. Here it is set ([`READ_BUF`]), and the layers of
//! reqwest's client are not crossed for each piece of a body. Everything this client does not do exactly as
//! reqwest does goes to reqwest, made only when first needed (it loads the
//! system's trust store): `https://`, a proxy in the environment, a request
//! with a body or other than GET and HEAD, and any redirect answer, which
//! is asked again through reqwest so that it follows it as before
//! (docs/remote.md, "What a remote read holds").

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http::HeaderValue;
use http::header::USER_AGENT;
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use object_store::client::HttpConnector as _;
use object_store::client::{
    HttpClient, HttpError, HttpErrorKind, HttpRequest, HttpRequestBody, HttpResponse,
    HttpResponseBody, HttpService, ReqwestConnector,
};
use object_store::{ClientConfigKey, ClientOptions};

/// hyper's `max_buf_size` for a connection by default
/// ([`crate::Options::read_buf`]): it reads at most this much at a time,
/// into the buffer's spare room, which `BytesMut` may double when it
/// reserves, so a body's pieces and a connection's buffer stay under twice
/// this (reqwest let it grow to 8 KiB + 400 KiB). Measured (loaded, CPU
/// against reqwest's, `ls -j 2` over nginx): 64 KiB cost the plain corpus
/// 1.16x (each piece is a hand-over from the connection's task and a
/// timed wait: 12,300 reads of the socket where reqwest made 2,500),
/// 128 KiB 1.11x, 256 KiB 0.92x (gzip 0.96x), 512 KiB 0.93x with 7 MiB
/// more held.
pub(crate) const READ_BUF: usize = 256 * 1024;

/// The User-Agent of every request, on either transport, unless the
/// options name one: hyper's client sends none of its own, where
/// object_store gives reqwest's client one (some servers refuse a
/// request without it).
const AGENT: &str = concat!("warchest/", env!("CARGO_PKG_VERSION"));

/// The variables reqwest takes a proxy from: with any of them set, every
/// request goes through reqwest, which honours them (and `NO_PROXY`).
const PROXY_VARS: [&str; 4] = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];

/// Makes the [`Plain`] service for a store (object_store calls this once
/// when the store is built).
#[derive(Debug)]
pub(crate) struct PlainConnector {
    pub(crate) connect_timeout: Duration,
    /// hyper's `max_buf_size` ([`crate::Options::read_buf`]).
    pub(crate) read_buf: usize,
}

impl object_store::client::HttpConnector for PlainConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let proxied = PROXY_VARS
            .iter()
            .any(|n| std::env::var_os(n).is_some_and(|v| !v.is_empty()));
        let direct = (!proxied).then(|| {
            let mut connector = HttpConnector::new();
            connector.set_connect_timeout(Some(self.connect_timeout));
            // As reqwest does.
            connector.set_nodelay(true);
            Client::builder(TokioExecutor::new())
                .http1_max_buf_size(self.read_buf.clamp(16 << 10, 16 << 20))
                .pool_timer(TokioTimer::new())
                .pool_idle_timeout(Duration::from_secs(90))
                .build(connector)
        });
        let agent = options
            .get_config_value(&ClientConfigKey::UserAgent)
            .and_then(|a| HeaderValue::from_str(&a).ok())
            .unwrap_or(HeaderValue::from_static(AGENT));
        Ok(HttpClient::new(Plain {
            direct,
            options: options.clone().with_user_agent(agent.clone()),
            agent,
            fallback: Arc::new(OnceLock::new()),
        }))
    }
}

/// hyper for plain-HTTP GET and HEAD, reqwest for the rest.
#[derive(Debug)]
struct Plain {
    /// `None` when a proxy is set.
    direct: Option<Client<HttpConnector, HttpRequestBody>>,
    /// reqwest's options, with [`Plain::agent`] as their User-Agent.
    options: ClientOptions,
    /// The User-Agent hyper's requests get ([`AGENT`] unless the options
    /// name one), as reqwest's do.
    agent: HeaderValue,
    fallback: Arc<OnceLock<Result<HttpClient, String>>>,
}

impl Plain {
    /// reqwest's client, made at first need.
    fn fallback(&self) -> Result<HttpClient, HttpError> {
        self.fallback
            .get_or_init(|| {
                ReqwestConnector::default()
                    .connect(&self.options)
                    .map_err(|e| e.to_string())
            })
            .clone()
            .map_err(|e| HttpError::new(HttpErrorKind::Unknown, std::io::Error::other(e)))
    }

    async fn call(&self, mut req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let direct = match &self.direct {
            Some(c)
                if req.uri().scheme_str() == Some("http")
                    && matches!(*req.method(), http::Method::GET | http::Method::HEAD)
                    && req.body().is_empty() =>
            {
                c
            }
            _ => return self.fallback()?.execute(req).await,
        };
        if !req.headers().contains_key(USER_AGENT) {
            req.headers_mut().insert(USER_AGENT, self.agent.clone());
        }
        // Kept to ask again through reqwest if the answer is a redirect.
        let again = {
            let mut r = http::Request::new(HttpRequestBody::empty());
            *r.method_mut() = req.method().clone();
            *r.uri_mut() = req.uri().clone();
            *r.headers_mut() = req.headers().clone();
            r
        };
        let res = direct.request(req).await.map_err(client_error)?;
        if res.status().is_redirection() {
            return self.fallback()?.execute(again).await;
        }
        let (parts, body) = res.into_parts();
        let body = HttpResponseBody::new(body.map_err(body_error));
        Ok(HttpResponse::from_parts(parts, body))
    }
}

impl HttpService for Plain {
    fn call<'a, 'b>(
        &'a self,
        req: HttpRequest,
    ) -> Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(Plain::call(self, req))
    }
}

/// A failed request, sorted as object_store sorts reqwest's errors (a
/// connection refused is `Connect`; a reset or an answer cut short,
/// `Interrupted` or `Request`), so that this crate's retries and messages
/// are the same as over reqwest.
fn client_error(e: hyper_util::client::legacy::Error) -> HttpError {
    if e.is_connect() {
        return HttpError::new(HttpErrorKind::Connect, e);
    }
    let kind = kind_of(&e);
    HttpError::new(kind, e)
}

/// An error while the body is read.
fn body_error(e: hyper::Error) -> HttpError {
    let kind = kind_of(&e);
    HttpError::new(kind, e)
}

/// The kind of a transport error, from the chain of its sources.
fn kind_of(e: &(dyn std::error::Error + 'static)) -> HttpErrorKind {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut depth = 0;
    while let Some(s) = src {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            if h.is_timeout() {
                return HttpErrorKind::Timeout;
            }
            if h.is_closed() || h.is_incomplete_message() {
                return HttpErrorKind::Request;
            }
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            match io.kind() {
                K::TimedOut => return HttpErrorKind::Timeout,
                K::ConnectionAborted | K::ConnectionReset | K::BrokenPipe | K::UnexpectedEof => {
                    return HttpErrorKind::Interrupted;
                }
                _ => {}
            }
        }
        depth += 1;
        if depth > 16 {
            break;
        }
        src = s.source();
    }
    HttpErrorKind::Unknown
}
