#!/usr/bin/env python3
# Producer pins (the corpus folder records which one ran):
#   tiledb-2.30: tiledb-py 0.36.1, TileDB 2.30.0, format version 22  (venv .venv-tiledb)
#   tiledb-2.13: tiledb-py 0.19.1, TileDB 2.13.x, format version 16  (venv .venv-tiledb-0.19, numpy<2)
#   Releases in between, one per format version (venv .venv-tiledb-<tiledb-py>, numpy<2), each
#   replaying only FORMAT_CHANGE_CASES to keep the corpus small:
#   tiledb-2.14: tiledb-py 0.20.0, format 17    tiledb-2.15: tiledb-py 0.21.6, format 18
#   tiledb-2.16: tiledb-py 0.22.3, format 19    tiledb-2.17: tiledb-py 0.23.5, format 20
#   tiledb-2.19: tiledb-py 0.25.1, format 21
"""Replay every case of conformance/cases/ with real TileDB and record what TileDB reads back.

    .venv-tiledb/bin/python conformance/scripts/generate_corpus.py [--only SUBSTRING] [--keep]

Writes conformance/corpus/<producer>/<case-id>/ (the array or group folders, then expected.json)
and rewrites conformance/corpus/MANIFEST.json for that producer. TileDB is the oracle: every
expected result comes from a tiledb-py read, never from the case file. Negative cases are made
from the arrays of their base case by a deterministic mutation, and the generator checks that
TileDB itself refuses them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tdbcase  # noqa: E402
import tiledb  # noqa: E402

# The cases the releases between 2.13 and 2.30 replay: the core layouts once more, and every
# feature whose bytes changed between format 16 and 22 (spec/format.toml, [[version]] 17-22).
FORMAT_CHANGE_CASES = [
    # core: fixed, var-sized, nullable, string dimensions, Hilbert order
    "dense.basic.int32",
    "sparse.basic.int32",
    "dense.attr.var_nullable",
    "sparse.attr.var_utf8.nullable.zstd",
    "dense.attr.string_utf8",
    "sparse.dims.string_and_int",
    "sparse.order.hilbert",
    # 17: offsets of RLE/dictionary-encoded var strings kept in the data tile
    "sparse.filter.rle.strings",
    "sparse.filter.dictionary",
    # 18: dimension labels
    "dense.dimension_labels",
    # 19: delta reinterpret datatype, relative paths in vacuum files
    "dense.filter.delta.reinterpret",
    "sparse.consolidate.fragments.vacuum",
    "sparse.consolidate.commits.vacuum",
    # 20: enumerations, double-delta reinterpret, bit-width reduction on date/time types
    "sparse.enumeration",
    "sparse.enumeration.extended",
    "sparse.filter.double_delta",
    "dense.filter.bit_width_reduction",
    "sparse.attr.datetime_ns",
    # read semantics over the same releases: deletes, consolidated metadata, evolution, time travel
    "sparse.delete.consolidated",
    "sparse.consolidate.fragment_meta",
    "sparse.evolution.add_drop",
    "dense.fragments.time_travel",
]

PRODUCERS = {
    (2, 30): {"name": "tiledb-2.30", "tiledb_py": "0.36.1", "format_version": 22},
    (2, 19): {"name": "tiledb-2.19", "tiledb_py": "0.25.1", "format_version": 21, "cases": FORMAT_CHANGE_CASES},
    (2, 17): {"name": "tiledb-2.17", "tiledb_py": "0.23.5", "format_version": 20, "cases": FORMAT_CHANGE_CASES},
    (2, 16): {"name": "tiledb-2.16", "tiledb_py": "0.22.3", "format_version": 19, "cases": FORMAT_CHANGE_CASES},
    (2, 15): {"name": "tiledb-2.15", "tiledb_py": "0.21.6", "format_version": 18, "cases": FORMAT_CHANGE_CASES},
    (2, 14): {"name": "tiledb-2.14", "tiledb_py": "0.20.0", "format_version": 17, "cases": FORMAT_CHANGE_CASES},
    (2, 13): {"name": "tiledb-2.13", "tiledb_py": "0.19.1", "format_version": 16},
}


def producer():
    ver = tiledb.libtiledb.version()
    key = (ver[0], ver[1])
    if key not in PRODUCERS:
        sys.exit(f"TileDB {ver} is not a pinned producer; pins: {sorted(PRODUCERS)}")
    p = dict(PRODUCERS[key])
    p["tiledb"] = ".".join(str(x) for x in ver)
    p["tiledb_py_found"] = tiledb.__version__
    p["legacy"] = tdbcase.LEGACY
    if tiledb.__version__ != p["tiledb_py"]:
        print(f"warning: tiledb-py {tiledb.__version__} differs from the pin {p['tiledb_py']}", file=sys.stderr)
    return p


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def list_files(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            full = os.path.join(dirpath, fn)
            out.append(os.path.relpath(full, root).replace(os.sep, "/"))
    return sorted(out)


# ---------------------------------------------------------------------------------------------
# Mutations for negative cases. Deterministic: they depend only on the case and the file bytes.
# ---------------------------------------------------------------------------------------------


def pick_file(root, pattern):
    import fnmatch

    matches = [f for f in list_files(root) if fnmatch.fnmatch(f, pattern)]
    if not matches:
        raise ValueError(f"mutation: no file matches {pattern!r} under {root}")
    return matches[0]


def mutate(root, m):
    rel = pick_file(root, m["file"])
    path = os.path.join(root, rel)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    kind = m["kind"]
    if kind == "truncate":
        keep = m.get("keep_bytes")
        if keep is None:
            keep = len(data) * m.get("keep_percent", 50) // 100
        data = data[:keep]
    elif kind == "bitflip":
        off = m["offset"] if m["offset"] >= 0 else len(data) + m["offset"]
        data[off] ^= 1 << m.get("bit", 0)
    elif kind == "patch_u32":
        off = m["offset"]
        data[off : off + 4] = int(m["value"]).to_bytes(4, "little")
    elif kind == "schema_version":
        value = None if m["value"] is None else int(m["value"])
        data = bytearray(rewrite_schema_version(bytes(data), value))
    elif kind == "delete":
        os.remove(path)
        return {**m, "file": rel}
    elif kind == "rename":
        os.rename(path, os.path.join(os.path.dirname(path), m["new_name"]))
        return {"file": rel, "kind": kind, "new_name": m["new_name"]}
    else:
        raise ValueError(f"unknown mutation {kind}")
    with open(path, "wb") as f:
        f.write(data)
    return {**m, "file": rel}


def rewrite_schema_version(data: bytes, version) -> bytes:
    """Set the version field at the start of a schema generic tile's payload.

    The payload is filtered (compressed), so the tile is unfiltered, patched, and written back
    with an empty filter pipeline and a single raw chunk: a valid generic tile that differs from
    the original only in that version field. The generator checks that TileDB reads the same
    rewrite with the version unchanged (see the control in main()).
    """
    import struct
    import zlib

    tile_version, _persisted, tile_size = struct.unpack_from("<IQQ", data, 0)
    datatype = data[20]
    (cell_size,) = struct.unpack_from("<Q", data, 21)
    encryption = data[29]
    if encryption != 0:
        raise ValueError("schema_version mutation: encrypted schemas are not supported")
    (pipeline_size,) = struct.unpack_from("<I", data, 30)
    pipeline = data[34 : 34 + pipeline_size]
    max_chunk, nfilters = struct.unpack_from("<II", pipeline, 0)
    types = []
    pos = 8
    for _ in range(nfilters):
        ftype = pipeline[pos]
        (mlen,) = struct.unpack_from("<I", pipeline, pos + 1)
        types.append((ftype, pipeline[pos + 5 : pos + 5 + mlen]))
        pos += 5 + mlen
    body = data[34 + pipeline_size :]
    (nchunks,) = struct.unpack_from("<Q", body, 0)
    off = 8
    payload = b""
    for _ in range(nchunks):
        orig, filtered, mlen = struct.unpack_from("<III", body, off)
        off += 12 + mlen
        chunk = body[off : off + filtered]
        off += filtered
        for ftype, _meta in reversed(types):
            if ftype == 1:  # GZIP
                chunk = zlib.decompress(chunk)
            elif ftype == 0:  # NONE
                pass
            else:
                raise ValueError(f"schema_version mutation: filter type {ftype} not handled")
        if len(chunk) != orig:
            raise ValueError("schema_version mutation: chunk size mismatch after unfiltering")
        payload += chunk
    if version is not None:
        payload = struct.pack("<I", version) + payload[4:]
    new_pipeline = struct.pack("<II", max_chunk, 0)
    new_body = struct.pack("<Q", 1) + struct.pack("<III", len(payload), len(payload), 0) + payload
    header = (
        struct.pack("<IQQ", tile_version, len(new_body), tile_size)
        + bytes([datatype])
        + struct.pack("<Q", cell_size)
        + bytes([encryption])
        + struct.pack("<I", len(new_pipeline))
        + new_pipeline
    )
    return header + new_body


# ---------------------------------------------------------------------------------------------


def build_case(case, case_dir, built):
    """Produce the folders of one case in case_dir; returns the mutation record if any."""
    if "base" in case:
        base_dir = built.get(case["base"])
        if base_dir is None:
            raise ValueError(f"{case['id']}: base case {case['base']} was not built")
        for entry in sorted(os.listdir(base_dir)):
            if entry == "expected.json":
                continue
            shutil.copytree(os.path.join(base_dir, entry), os.path.join(case_dir, entry))
        root = os.path.join(case_dir, case.get("uri", "array"))
        if any(m["kind"] == "schema_version" for m in case["mutations"]):
            control_schema_rewrite(case, base_dir)
        return [mutate(root, m) for m in case["mutations"]]
    tdbcase.replay(case, case_dir)
    return None


def control_schema_rewrite(case, base_dir):
    """TileDB must still read the base array after the schema rewrite with the version kept,
    so that the negative case fails for its version alone."""
    with tempfile.TemporaryDirectory() as tmp:
        for entry in os.listdir(base_dir):
            if entry != "expected.json":
                shutil.copytree(os.path.join(base_dir, entry), os.path.join(tmp, entry))
        root = os.path.join(tmp, case.get("uri", "array"))
        for m in case["mutations"]:
            if m["kind"] == "schema_version":
                mutate(root, {**m, "value": None})
        for read in case.get("reads", []):
            tdbcase.run_read(tmp, case, read)


def expected_for(case, case_dir, prod_name):
    reads = []
    for read in case.get("reads", []):
        entry = {"id": read["id"]}
        if "expect_error" in read or "expect_error" in case:
            cls = read.get("expect_error", case.get("expect_error"))
            try:
                got = tdbcase.run_read(case_dir, case, read)
            except tiledb.TileDBError as e:
                entry["error"] = cls
                # For information only; paths are made relative to the case folder.
                entry["oracle_message"] = str(e).replace(os.path.abspath(case_dir) + os.sep, "").replace(case_dir + os.sep, "")
            else:
                raise SystemExit(f"{case['id']}/{read['id']}: expected an error but TileDB read {json.dumps(got)[:200]}")
        else:
            entry.update(tdbcase.run_read(case_dir, case, read))
        bugs = [b for b in case.get("oracle_bugs", []) if b["producer"] == prod_name and b["read"] == read["id"]]
        # A release whose reader answers differently from today's TileDB by design (not a format
        # difference) is recorded like a bug: its output is kept and runners skip the read.
        bugs += [
            d
            for d in case.get("release_differences", [])
            if d["kind"] == "reader" and prod_name in d["producers"] and d["read"] == read["id"]
        ]
        if bugs:
            # This TileDB release is known to read this wrong: keep its output for the record,
            # but mark the read so that runners skip it instead of comparing.
            result = {k: v for k, v in entry.items() if k != "id"}
            entry = {"id": read["id"], "skip": bugs[0]["note"], "oracle_output": result}
        reads.append(entry)
    return reads


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="only cases whose id contains this")
    ap.add_argument("--out", default=os.path.join(tdbcase.CONFORMANCE_DIR, "corpus"))
    args = ap.parse_args()

    prod = producer()
    out_root = os.path.join(args.out, prod["name"])
    os.makedirs(out_root, exist_ok=True)
    cases = tdbcase.load_cases(args.only)
    if "cases" in prod:
        cases = [c for c in cases if c["id"] in prod["cases"]]
    # Base cases first so that negative cases can copy them.
    cases.sort(key=lambda c: ("base" in c, c["id"]))
    built = {}
    failures = []
    skipped = {}
    for case in cases:
        if not tdbcase.applies(case, prod["format_version"]):
            continue
        cid = case["id"]
        case_dir = os.path.join(out_root, cid)
        if "base" in case and case["base"] not in built:
            existing = os.path.join(out_root, case["base"])
            if os.path.isdir(existing):
                built[case["base"]] = existing
        if os.path.exists(case_dir):
            shutil.rmtree(case_dir)
        os.makedirs(case_dir)
        try:
            mutations = build_case(case, case_dir, built)
            reads = expected_for(case, case_dir, prod["name"])
        except Exception as e:  # report all failing cases at the end
            shutil.rmtree(case_dir)
            reason = f"{type(e).__name__}: {e}".replace(os.path.abspath(case_dir) + os.sep, "")
            if isinstance(e, tdbcase.Unsupported) or prod["legacy"]:
                # An old tiledb-py that cannot replay a case is a limit of the producer, not a
                # bug of the case: record it in the manifest and go on.
                skipped[cid] = reason
                print(f"skip {cid}: {reason}", file=sys.stderr)
            else:
                failures.append((cid, reason))
                print(f"FAIL {cid}: {reason}", file=sys.stderr)
            continue
        built[cid] = case_dir
        expected = {
            "case": cid,
            "case_file": case["_file"],
            "producer": {k: prod[k] for k in ("name", "tiledb", "tiledb_py", "format_version")},
            "negative": "expect_error" in case,
            "reads": reads,
        }
        if mutations:
            expected["mutations"] = mutations
        with open(os.path.join(case_dir, "expected.json"), "w") as f:
            f.write(tdbcase.dumps(expected))
        print(f"ok   {cid}")
    write_manifest(args.out, prod, skipped, only=args.only)
    if failures:
        print(f"{len(failures)} case(s) failed", file=sys.stderr)
        sys.exit(1)


def write_manifest(corpus_root, prod, skipped, only=None):
    """Rewrite this producer's section of MANIFEST.json from what is on disk."""
    path = os.path.join(corpus_root, "MANIFEST.json")
    manifest = {"manifest_version": 1, "producers": {}}
    if os.path.exists(path):
        with open(path) as f:
            manifest = json.load(f)
    root = os.path.join(corpus_root, prod["name"])
    entries = {}
    for cid in sorted(os.listdir(root)):
        case_dir = os.path.join(root, cid)
        if not os.path.isdir(case_dir):
            continue
        with open(os.path.join(case_dir, "expected.json")) as f:
            exp = json.load(f)
        entries[cid] = {
            "case_file": exp["case_file"],
            "negative": exp["negative"],
            "files": {rel: sha256(os.path.join(case_dir, rel)) for rel in list_files(case_dir)},
        }
    previous = manifest["producers"].get(prod["name"], {}).get("skipped", {})
    if only:
        # A partial run keeps what it did not revisit.
        skipped = {**{k: v for k, v in previous.items() if only not in k}, **skipped}
    manifest["producers"][prod["name"]] = {
        "tiledb": prod["tiledb"],
        "tiledb_py": prod["tiledb_py"],
        "format_version": prod["format_version"],
        **({"selection": "FORMAT_CHANGE_CASES in conformance/scripts/generate_corpus.py"} if "cases" in prod else {}),
        "cases": entries,
        "skipped": dict(sorted((k, v) for k, v in skipped.items() if k not in entries)),
    }
    manifest["producers"] = dict(sorted(manifest["producers"].items()))
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=False)
        f.write("\n")


if __name__ == "__main__":
    main()
