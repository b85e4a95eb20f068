#!/usr/bin/env python3
"""Conformance adapter for TileDB itself, through tiledb-py (contract: conformance/README.md).

    python tiledb_py_adapter.py info
    python tiledb_py_adapter.py write CASE_FILE OUT_DIR
    python tiledb_py_adapter.py read ARRAY_ROOT CASE_FILE READ_ID
    python tiledb_py_adapter.py read ARRAY_ROOT READ_JSON
    python tiledb_py_adapter.py serve        # one JSON request per line on stdin

Run it with the interpreter of a venv holding tiledb-py (e.g. .venv-tiledb/bin/python). It only
dumps canonical JSON; comparing is the runner's job.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))

import tdbcase  # noqa: E402
import tiledb  # noqa: E402

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore

SPEC_FORMAT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "spec", "format.toml")


def format_written_by(version):
    """The format version a TileDB release writes: the newest one spec/format.toml says was
    introduced at or before that release (development releases, e.g. "2.31-dev", left out)."""
    with open(SPEC_FORMAT, "rb") as f:
        history = tomllib.load(f)["version"]
    best = None
    for entry in history:
        release = entry.get("release", "")
        if not all(part.isdigit() for part in release.split(".")):
            continue
        if tuple(int(p) for p in release.split(".")) <= tuple(version):
            best = max(best or 0, entry["number"])
    return best


class UsageError(Exception):
    pass


def info():
    ver = tiledb.libtiledb.version()
    fmt = format_written_by(ver)
    caps = [
        "dense", "sparse", "var", "multi-value", "fill", "filter", "datatype", "dimension",
        "string-dimension", "fragments", "time-travel", "duplicates", "hilbert", "col-major",
        "consolidation", "vacuum", "delete",
    ]
    if not tdbcase.LEGACY:
        # tiledb-py 0.19 reads no validity and writes no typed metadata (see conformance/README.md).
        caps += ["nullable", "schema-evolution", "metadata", "group", "enumeration", "dimension-label", "encryption"]
    return {
        "name": "tiledb-py",
        "version": f"TileDB {'.'.join(map(str, ver))} (tiledb-py {tiledb.__version__})",
        "roles": ["reader", "writer"],
        # TileDB reads every older format version and writes only its own.
        "format_versions": list(range(1, fmt + 1)) if fmt else [],
        "write_format_version": fmt,
        "capabilities": sorted(caps),
    }


def load_case(case_file):
    with open(case_file, "rb") as f:
        return tomllib.load(f)


def write(case_file, out_dir):
    case = load_case(case_file)
    if "base" in case:
        raise UsageError("negative cases are made by mutation, not written")
    os.makedirs(out_dir, exist_ok=True)
    tdbcase.replay(case, out_dir)
    return {"ok": True}


def read(array_root, case, read_spec):
    return tdbcase.run_read(array_root, case, read_spec)


def read_by_id(array_root, case_file, read_id):
    case = load_case(case_file)
    for r in case.get("reads", []):
        if r["id"] == read_id:
            return read(array_root, case, r)
    raise UsageError(f"no read {read_id!r} in {case_file}")


def classify(e):
    """Map an exception to the contract's error classes. TileDB gives no error codes, so its
    messages are matched; anything unrecognised TileDB refused is reported as corrupt."""
    if isinstance(e, UsageError):
        return "usage"
    if isinstance(e, tdbcase.Unsupported):
        return "unsupported"
    if isinstance(e, (FileNotFoundError, PermissionError)):
        return "io"
    if isinstance(e, tiledb.TileDBError):
        msg = str(e)
        if "is newer than" in msg or "not supported" in msg.lower():
            return "unsupported"
        return "corrupt"
    return "other"


def dispatch(args):
    if not args:
        raise UsageError("expected a command: info | write | read | serve")
    cmd, rest = args[0], args[1:]
    if cmd == "info" and not rest:
        return info()
    if cmd == "write" and len(rest) == 2:
        return write(*rest)
    if cmd == "read" and len(rest) == 3:
        return read_by_id(*rest)
    if cmd == "read" and len(rest) == 2:
        spec = json.loads(rest[1])
        return read(rest[0], spec.pop("case", {}), spec)
    raise UsageError(f"bad command line: {' '.join(args)}")


def handle_request(req):
    op = req.get("op")
    if op == "info":
        return info()
    if op == "write":
        return write(req["case_file"], req["out_dir"])
    if op == "read" and "read_id" in req:
        return read_by_id(req["array_root"], req["case_file"], req["read_id"])
    if op == "read":
        return read(req["array_root"], req.get("case", {}), req["read"])
    raise UsageError(f"unknown request op {op!r}")


def serve():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            answer = handle_request(json.loads(line))
        except Exception as e:  # every failure becomes an answer; the loop goes on
            answer = {"error": classify(e), "message": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(answer, ensure_ascii=True) + "\n")
        sys.stdout.flush()


def main():
    args = sys.argv[1:]
    if args == ["serve"]:
        serve()
        return 0
    try:
        out = dispatch(args)
    except Exception as e:
        print(json.dumps({"error": classify(e), "message": f"{type(e).__name__}: {e}"}))
        return 1
    print(json.dumps(out, ensure_ascii=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
