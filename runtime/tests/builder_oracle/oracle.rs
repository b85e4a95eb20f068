//! TileDB 2.30 through `oracle.py` (tiledb-py in `.venv-tiledb`): one JSON
//! request a line. The process is restarted when it dies (TileDB crashes on
//! some inputs), and the request is then answered as a crash.

use std::io::{BufRead, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

/// TileDB through the oracle script.
pub struct Oracle {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Oracle {
    /// Starts the oracle; `Err` says why it cannot run (no venv).
    pub fn start() -> Result<Oracle, String> {
        let python = crate::common::tiledb_python()
            .ok_or("no venv with tiledb-py (.venv-tiledb or $TILEDB_PY)")?;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/builder_oracle/oracle.py");
        let mut child = Command::new(&python)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Oracle {
            child,
            stdin,
            stdout,
        })
    }

    fn try_request(&mut self, req: &Value) -> Result<Value, String> {
        writeln!(self.stdin, "{req}").map_err(|e| format!("write: {e}"))?;
        self.stdin.flush().map_err(|e| format!("flush: {e}"))?;
        for _ in 0..100 {
            let mut line = String::new();
            if self
                .stdout
                .read_line(&mut line)
                .map_err(|e| e.to_string())?
                == 0
            {
                return Err("the oracle exited".into());
            }
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                return Ok(v);
            }
        }
        Err("no answer".into())
    }

    /// One request; a crash of TileDB is answered `{"error": "crashed: ..."}`
    /// and the oracle restarted.
    pub fn request(&mut self, req: &Value) -> Value {
        match self.try_request(req) {
            Ok(v) => v,
            Err(why) => {
                if let Ok(fresh) = Oracle::start() {
                    *self = fresh;
                }
                json!({ "error": format!("crashed: {why}") })
            }
        }
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
