//! A real S3 server for the object-storage tests: moto's server mode
//! (from `.venv-tiledb`), started on 127.0.0.1 by the test itself, and a
//! small HTTP proxy in front of it that counts the requests and injects
//! faults (dropped connections, 500/503 answers, slow answers, bodies cut
//! short). TileDB 2.30 (tiledb-py) talks to the same server through
//! `tiledb_s3.py`.

#![allow(dead_code)]

pub mod corpus;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;

pub use crate::support::workspace;

/// The oracle venv's Python, with moto: `None` (and the reason printed)
/// when it is missing, so the caller can skip.
pub fn python() -> Option<PathBuf> {
    let python = tiledb_conformance::oracle::tiledb_python_or_skip("the object-store test")?;
    let ok = Command::new(&python)
        .args(["-c", "import moto.server, tiledb"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but .venv-tiledb lacks moto[server] or tiledb"
        );
        println!("skipped: .venv-tiledb lacks moto[server] (scripts/test installs it)");
        return None;
    }
    Some(python)
}

const MOTO: &str = "
import sys
from moto.server import ThreadedMotoServer
server = ThreadedMotoServer(ip_address='127.0.0.1', port=0, verbose=False)
server.start()
print(server.get_host_and_port()[1], flush=True)
sys.stdin.read()  # ends with the test process (its end of the pipe closes)
";

/// The server, shared by the tests of one binary: its port. It stops when
/// the test process ends and its standard input closes.
pub fn moto_port() -> Option<u16> {
    /// The port, and the child with its standard input (kept open while
    /// the process lives).
    type Server = (u16, Mutex<(Child, ChildStdin)>);
    static SERVER: OnceLock<Option<Server>> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            let mut child = Command::new(python()?)
                .args(["-c", MOTO])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("start moto");
            let mut line = String::new();
            BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            let port = line.trim().parse().expect("moto prints its port");
            let stdin = child.stdin.take().unwrap();
            Some((port, Mutex::new((child, stdin))))
        })
        .as_ref()
        .map(|(port, _)| *port)
}

/// Makes the bucket `name` (moto's server takes an unsigned request).
pub fn create_bucket(port: u16, name: &str) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "PUT /{name} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200"),
        "{answer}"
    );
}

/// A fault the proxy injects.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// Every request forwarded untouched.
    None,
    /// Every `every`-th request answered with `code` (not forwarded).
    Status { every: usize, code: u16 },
    /// Every `every`-th request's connection closed without an answer.
    Drop { every: usize },
    /// Every `every`-th answer sent after `millis`.
    Slow { every: usize, millis: u64 },
    /// Every `every`-th answer's body cut in half, then the connection closed.
    CutBody { every: usize },
    /// Every request whose line holds `needle` answered with `code`.
    Matching { needle: String, code: u16 },
}

/// The proxy's shared state.
pub struct Proxy {
    pub port: u16,
    fault: Mutex<Fault>,
    seen: AtomicUsize,
    log: Mutex<Vec<String>>,
    /// Bytes answered (heads and bodies) since the last `take_answered`.
    answered: AtomicUsize,
    /// Rewrites each request's head before it is forwarded, and each answer
    /// (given the request line) before it is sent back.
    bridge: Bridge,
}

/// What a proxy changes in requests and answers (what an emulator needs
/// that a real service does not): the request's head, then the answer
/// given the request line.
pub type Bridge = (fn(String) -> String, fn(&str, Vec<u8>) -> Vec<u8>);

impl Proxy {
    /// A proxy on a free port of 127.0.0.1 in front of `upstream`.
    pub fn start(upstream: u16) -> Arc<Proxy> {
        Self::start_bridging(upstream, (|head| head, |_, answer| answer))
    }

    /// A proxy that forwards requests and answers as `bridge` rewrites them.
    pub fn start_bridging(upstream: u16, bridge: Bridge) -> Arc<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy = Arc::new(Proxy {
            port: listener.local_addr().unwrap().port(),
            fault: Mutex::new(Fault::None),
            seen: AtomicUsize::new(0),
            log: Mutex::new(Vec::new()),
            answered: AtomicUsize::new(0),
            bridge,
        });
        let shared = Arc::clone(&proxy);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let proxy = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let _ = proxy.serve(client, upstream);
                });
            }
        });
        proxy
    }

    /// Injects `fault` from now on (and restarts the count it applies by).
    pub fn set_fault(&self, fault: Fault) {
        *self.fault.lock().unwrap() = fault;
        self.seen.store(0, Ordering::SeqCst);
    }

    /// The request lines (`GET /bucket/key?…`) seen since the last call.
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }

    /// The bytes of the answers sent since the last call.
    pub fn take_answered(&self) -> usize {
        self.answered.swap(0, Ordering::SeqCst)
    }

    /// One client connection: one request, forwarded on its own upstream
    /// connection (`Connection: close` both ways keeps the framing simple).
    fn serve(&self, mut client: TcpStream, upstream: u16) -> std::io::Result<()> {
        client.set_read_timeout(Some(Duration::from_secs(30)))?;
        let Some((head, body)) = read_request(&mut client)? else {
            return Ok(());
        };
        let mut line = head.lines().next().unwrap_or_default().to_owned();
        if let Some(range) = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("range:"))
        {
            line = format!("{line} [{}]", range[6..].trim());
        }
        self.log.lock().unwrap().push(line.clone());
        let n = self.seen.fetch_add(1, Ordering::SeqCst) + 1;
        let fault = self.fault.lock().unwrap().clone();
        let hit = |every: usize| every > 0 && n.is_multiple_of(every);
        match &fault {
            Fault::Status { every, code } if hit(*every) => return answer_status(client, *code),
            Fault::Matching { needle, code } if line.contains(needle.as_str()) => {
                return answer_status(client, *code)
            }
            Fault::Drop { every } if hit(*every) => return client.shutdown(Shutdown::Both),
            _ => {}
        }
        let mut server = TcpStream::connect(("127.0.0.1", upstream))?;
        let head = (self.bridge.0)(head);
        let request_line = head.lines().next().unwrap_or_default().to_owned();
        server.write_all(head.as_bytes())?;
        server.write_all(&body)?;
        let mut response = Vec::new();
        server.read_to_end(&mut response)?;
        let response = (self.bridge.1)(&request_line, response);
        match fault {
            Fault::Slow { every, millis } if hit(every) => {
                std::thread::sleep(Duration::from_millis(millis));
            }
            Fault::CutBody { every } if hit(every) => {
                let cut = body_start(&response)
                    .map_or(response.len(), |start| start + (response.len() - start) / 2);
                if cut < response.len() {
                    client.write_all(&response[..cut])?;
                    return client.shutdown(Shutdown::Both);
                }
            }
            _ => {}
        }
        self.answered.fetch_add(response.len(), Ordering::SeqCst);
        client.write_all(&response)?;
        client.shutdown(Shutdown::Both)
    }
}

fn answer_status(mut client: TcpStream, code: u16) -> std::io::Result<()> {
    let body = format!("<Error><Code>Injected</Code><Message>injected {code}</Message></Error>");
    write!(
        client,
        "HTTP/1.1 {code} Injected\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    client.shutdown(Shutdown::Both)
}

fn body_start(response: &[u8]) -> Option<usize> {
    response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| p + 4)
}

/// Reads one request: its head (rewritten to `Connection: close`, without
/// `Expect`) and its body (by `Content-Length`). `None` at a clean EOF.
fn read_request(client: &mut TcpStream) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut head = String::new();
    let mut length = 0usize;
    let mut expect_continue = false;
    let mut chunked = false;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        if line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
        if lower.starts_with("expect:") {
            expect_continue = lower.contains("100-continue");
            continue;
        }
        if lower.starts_with("connection:") {
            continue;
        }
        head.push_str(&line);
    }
    head.push_str("Connection: close\r\n\r\n");
    if expect_continue {
        client.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    if chunked {
        return Ok(Some((head, read_chunked(&mut reader)?)));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Some((head, body)))
}

/// A chunked body, as sent (forwarded as it came): chunks up to the last,
/// empty one, then the trailers up to an empty line.
fn read_chunked(reader: &mut BufReader<TcpStream>) -> std::io::Result<Vec<u8>> {
    let mut raw = Vec::new();
    loop {
        let mut size_line = String::new();
        reader.read_line(&mut size_line)?;
        raw.extend_from_slice(size_line.as_bytes());
        let hex = size_line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(hex, 16)
            .map_err(|_| std::io::Error::other(format!("bad chunk size {size_line:?}")))?;
        if size == 0 {
            break;
        }
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk)?;
        raw.extend_from_slice(&chunk);
    }
    loop {
        let mut trailer = String::new();
        if reader.read_line(&mut trailer)? == 0 {
            break;
        }
        raw.extend_from_slice(trailer.as_bytes());
        if trailer == "\r\n" {
            break;
        }
    }
    Ok(raw)
}

/// Our configuration for the server at `port` (bucket in the URL).
pub fn our_config(port: u16) -> Vec<(String, String)> {
    [
        ("aws_endpoint", format!("http://127.0.0.1:{port}")),
        ("aws_allow_http", "true".into()),
        ("aws_access_key_id", "testing".into()),
        ("aws_secret_access_key", "testing".into()),
        ("aws_region", "us-east-1".into()),
        ("aws_virtual_hosted_style_request", "false".into()),
        // Short backoff: the faults are injected, not a real outage.
        ("retry_timeout_secs", "20".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// The same as `tdb --config` arguments.
pub fn tdb_config_args(port: u16) -> Vec<String> {
    config_args(our_config(port))
}

/// A store configuration (`key`, `value` pairs) as `tdb --config` arguments.
pub fn config_args(config: Vec<(String, String)>) -> Vec<String> {
    config
        .into_iter()
        .flat_map(|(k, v)| ["--config".to_owned(), format!("{k}={v}")])
        .collect()
}

/// `tdb` with the store configuration `config`; its standard output (it
/// must succeed).
pub fn tdb_configured(config: Vec<(String, String)>, args: &[&str]) -> Vec<u8> {
    let out = crate::support::tdb_command()
        .args(config_args(config))
        .args(args)
        .output()
        .expect("tdb runs");
    crate::support::succeeded(out, args)
}

/// TileDB's configuration for the server at `port`.
pub fn tiledb_config(port: u16) -> Value {
    serde_json::json!({
        "vfs.s3.endpoint_override": format!("127.0.0.1:{port}"),
        "vfs.s3.scheme": "http",
        "vfs.s3.use_virtual_addressing": "false",
        "vfs.s3.region": "us-east-1",
        "vfs.s3.aws_access_key_id": "testing",
        "vfs.s3.aws_secret_access_key": "testing",
        "vfs.s3.verify_ssl": "false",
        // TileDB's default (3 s without a byte) fails a listing of
        // thousands of keys that moto answers slowly on a loaded machine.
        "vfs.s3.request_timeout_ms": "60000",
    })
}

/// TileDB (tiledb-py) answering JSON requests (`tiledb_s3.py`).
pub struct TileDb {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl TileDb {
    /// TileDB configured for the server at `port`.
    pub fn start(python: &Path, port: u16) -> TileDb {
        Self::with_config(python, &tiledb_config(port))
    }

    /// TileDB with the settings `config` (`{"vfs.azure.…": …}`).
    pub fn with_config(python: &Path, config: &Value) -> TileDb {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/s3_support/tiledb_s3.py");
        let mut child = Command::new(python)
            .arg(script)
            .arg(config.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start tiledb_s3.py");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        TileDb {
            child,
            stdin,
            stdout,
        }
    }

    /// One request's answer.
    pub fn ask(&mut self, request: &Value) -> Value {
        writeln!(self.stdin, "{request}").unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }
}

impl Drop for TileDb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
