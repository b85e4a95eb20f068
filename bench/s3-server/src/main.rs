//! The S3 server of `bench/run --s3`: s3s-fs serving a folder on
//! 127.0.0.1, in a process of its own, counting the requests it answers.
//!
//! The benchmark's first server, moto, ran as a thread of the harness's
//! Python process behind a Python proxy: every byte either client read went
//! through two Python loops, and a ranged GET read the whole object. Both
//! clients then waited on the same slow server, which hid how fast each of
//! them is. This one reads only the range asked, answers on all cores and
//! shares no process with the harness, so what is timed is the clients.
//!
//! ```text
//! tiledb-bench-s3-server --root DIR [--port N] [--access-key K --secret-key S]
//! ```
//!
//! Prints `listening on 127.0.0.1:PORT` once it accepts connections.
//! `GET /-/requests` answers the number of S3 requests answered since the
//! previous such call (that call itself is not counted; `-` is not a valid
//! bucket name, so no S3 request has this path). With `S3_LOG=FILE`, each
//! request appends a line `START END METHOD URI [Range: …]` (seconds since
//! the epoch; END when its body has been sent) to FILE.

mod backend;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnectionBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::{S3Service, S3ServiceBuilder};
use tokio::net::TcpListener;

/// The command line: where objects live, where to listen, the one key pair.
struct Options {
    root: PathBuf,
    port: u16,
    keys: Option<(String, String)>,
}

fn parse_options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let (mut root, mut port, mut access, mut secret) = (None, 0, None, None);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--root" => root = Some(PathBuf::from(value()?)),
            "--port" => port = value()?.parse().map_err(|e| format!("--port: {e}"))?,
            "--access-key" => access = Some(value()?),
            "--secret-key" => secret = Some(value()?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let keys = match (access, secret) {
        (Some(a), Some(s)) => Some((a, s)),
        (None, None) => None,
        _ => return Err("--access-key and --secret-key go together".into()),
    };
    let root = root.ok_or("--root DIR is required")?;
    Ok(Options { root, port, keys })
}

fn seconds_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The request log of `S3_LOG`, if set.
struct RequestLog {
    file: Mutex<std::fs::File>,
}

impl RequestLog {
    fn from_env() -> Option<Arc<Self>> {
        let path = std::env::var_os("S3_LOG")?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()?;
        Some(Arc::new(Self {
            file: Mutex::new(file),
        }))
    }

    fn write(&self, line: &str) {
        if let Ok(mut file) = self.file.lock() {
            // A lost log line only loses a diagnostic.
            let _ = writeln!(file, "{line}");
        }
    }
}

/// A response body that writes its request's log line once it has been
/// sent (hyper drops a body when it is done with it).
struct LoggedBody {
    inner: s3s::Body,
    entry: Option<(Arc<RequestLog>, f64, String)>,
}

impl HttpBody for LoggedBody {
    type Data = Bytes;
    type Error = <s3s::Body as HttpBody>::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for LoggedBody {
    fn drop(&mut self) {
        if let Some((log, start, request)) = self.entry.take() {
            log.write(&format!("{start:.3} {:.3} {request}", seconds_now()));
        }
    }
}

/// What is shared by every connection.
struct Server {
    s3: S3Service,
    answered: AtomicU64,
    log: Option<Arc<RequestLog>>,
}

impl Server {
    async fn handle(
        self: Arc<Self>,
        request: Request<Incoming>,
    ) -> Result<Response<LoggedBody>, s3s::HttpError> {
        if request.uri().path() == "/-/requests" {
            let count = self.answered.swap(0, Ordering::SeqCst);
            return Ok(Response::new(LoggedBody {
                inner: s3s::Body::from(count.to_string()),
                entry: None,
            }));
        }
        self.answered.fetch_add(1, Ordering::SeqCst);
        let entry = self.log.as_ref().map(|log| {
            let range = request
                .headers()
                .get(hyper::header::RANGE)
                .and_then(|v| v.to_str().ok())
                .map(|r| format!(" Range: {r}"))
                .unwrap_or_default();
            let line = format!("{} {}{range}", request.method(), request.uri());
            (Arc::clone(log), seconds_now(), line)
        });
        let response = hyper::service::Service::call(&self.s3, request).await?;
        Ok(response.map(|inner| LoggedBody { inner, entry }))
    }
}

fn main() -> std::process::ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("tiledb-bench-s3-server: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("tiledb-bench-s3-server: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(options)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tiledb-bench-s3-server: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn serve(options: Options) -> Result<(), String> {
    let fs = s3s_fs::FileSystem::new(&options.root)
        .map_err(|e| format!("{}: {e:?}", options.root.display()))?;
    let backend = backend::Backend::new(fs, options.root.clone());
    let mut builder = S3ServiceBuilder::new(backend);
    if let Some((access, secret)) = options.keys {
        builder.set_auth(SimpleAuth::from_single(access, secret));
    }
    let server = Arc::new(Server {
        s3: builder.build(),
        answered: AtomicU64::new(0),
        log: RequestLog::from_env(),
    });
    let listener = TcpListener::bind(("127.0.0.1", options.port))
        .await
        .map_err(|e| format!("bind 127.0.0.1:{}: {e}", options.port))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    println!("listening on {address}");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let connections = ConnectionBuilder::new(TokioExecutor::new());
    loop {
        // A client that hung up before being accepted is skipped.
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        let _ = socket.set_nodelay(true);
        let server = Arc::clone(&server);
        let service = service_fn(move |request| Arc::clone(&server).handle(request));
        let connection = connections
            .serve_connection(TokioIo::new(socket), service)
            .into_owned();
        tokio::spawn(async move {
            // A connection the client dropped mid-answer ends here.
            let _ = connection.await;
        });
    }
}
