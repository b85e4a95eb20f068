"""TileDB 2.30 (tiledb-py) on the test's S3 server: the conformance adapter's
replay and reads, with every TileDB context configured for that server.

    python tiledb_s3.py CONFIG_JSON     # one JSON request per line on stdin

CONFIG_JSON is a TileDB configuration ({"vfs.s3.endpoint_override": ...}).
Requests: {"op": "replay", "case_file", "out"} writes a case's recipe with
TileDB under the URI `out`; {"op": "read", "array_root", "case_file",
"read_id"} and {"op": "read", "array_root", "read"} answer a read in the
conformance kit's canonical JSON; {"op": "fragments", "uri", "count"} makes
a sparse array of `count` one-cell fragments (the request-count bench);
{"op": "open", "uri"} opens an array (and closes it); {"op": "open_read", "uri"}
opens an array and reads it whole;
{"op": "consolidate_fragment_meta", "uri"} consolidates its fragment metadata;
{"op": "one_fragment", "uri", "kind"} writes a one-fragment array of many tiles
(`sparse`: 2D coordinates and a zstd attribute; `strings`: dense, plain var
strings; `dense`: 2D int64 cells in plain 2 MiB tiles) and {"op": "summary",
"uri", "kind"} reads it whole (`dense`: a small box of one tile) and sums it up;
{"op": "inspect", "uri"} describes an array as TileDB sees it (cells, attributes,
metadata, fragments, consolidated fragment metadata, fragments to vacuum) and
{"op": "group", "uri"} a group (members, metadata); {"op": "create_bucket", "uri"}
makes a bucket or container. Each answer is one JSON
line: the result, or {"error": message, "class": class}.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTERS = os.path.join(HERE, "..", "..", "..", "conformance", "adapters")
sys.path.insert(0, ADAPTERS)

import numpy as np  # noqa: E402
import tiledb  # noqa: E402
import tiledb_py_adapter as adapter  # noqa: E402
import tdbcase  # noqa: E402

S3 = json.loads(sys.argv[1])
# Every context, including those tiledb-py makes on its own (a dimension
# label's array), talks to the test's server and nowhere else.
tiledb.default_ctx(tiledb.Config(S3))
_make_ctx = tdbcase.make_ctx


def make_ctx(case, extra=None):
    merged = dict(S3)
    merged.update(extra or {})
    return _make_ctx(case, merged)


tdbcase.make_ctx = make_ctx
CTX = make_ctx({})


def fragments(uri, count):
    dim = tiledb.Dim(name="d", domain=(0, 1_000_000), tile=1000, dtype=np.int64)
    schema = tiledb.ArraySchema(
        domain=tiledb.Domain(dim), sparse=True, attrs=[tiledb.Attr(name="a", dtype=np.int32)]
    )
    tiledb.Array.create(uri, schema, ctx=CTX)
    for i in range(count):
        with tiledb.open(uri, "w", timestamp=i + 1, ctx=CTX) as A:
            A[np.array([i], dtype=np.int64)] = np.array([i * 7], dtype=np.int32)
    return {"ok": True}


def one_fragment(uri, kind):
    rng = np.random.default_rng(7)
    if kind == "sparse":
        dims = [tiledb.Dim(name=n, domain=(0, 9999), tile=100, dtype=np.int64) for n in "xy"]
        zstd = tiledb.FilterList([tiledb.ZstdFilter()])
        schema = tiledb.ArraySchema(
            domain=tiledb.Domain(*dims), sparse=True, capacity=1000, allows_duplicates=True,
            attrs=[tiledb.Attr(name="v", dtype=np.int64, filters=zstd)],
        )
        tiledb.Array.create(uri, schema, ctx=CTX)
        n = 300_000
        x, y = rng.integers(0, 10_000, n), rng.integers(0, 10_000, n)
        with tiledb.open(uri, "w", ctx=CTX) as A:
            A[x, y] = {"v": rng.integers(0, 1 << 40, n)}
    elif kind == "dense":
        # Tiles of 512 x 512 int64 cells (2 MiB), stored plainly (no filter).
        n = 1024
        dims = [tiledb.Dim(name=d, domain=(0, n - 1), tile=512, dtype=np.int64) for d in "rc"]
        schema = tiledb.ArraySchema(
            domain=tiledb.Domain(*dims), attrs=[tiledb.Attr(name="a", dtype=np.int64)]
        )
        tiledb.Array.create(uri, schema, ctx=CTX)
        with tiledb.open(uri, "w", ctx=CTX) as A:
            A[:] = rng.integers(0, 1 << 40, (n, n))
    else:
        n = 1_250_000
        dim = tiledb.Dim(name="i", domain=(0, n - 1), tile=100_000, dtype=np.int64)
        schema = tiledb.ArraySchema(
            domain=tiledb.Domain(dim), attrs=[tiledb.Attr(name="s", dtype=str, var=True)]
        )
        tiledb.Array.create(uri, schema, ctx=CTX)
        lengths = rng.integers(5, 20, n)
        text = np.array([f"{i:x}".ljust(int(k), "z") for i, k in enumerate(lengths)], dtype=object)
        with tiledb.open(uri, "w", ctx=CTX) as A:
            A[:] = {"s": text}
    return {"ok": True}


def summary(uri, kind):
    """The cells of a one-fragment array, summed up (wrapping at 2^64): the
    same sums in any cell order for `sparse`; for `strings`, sums that
    weigh each string and byte by its place."""
    mask = (1 << 64) - 1
    with tiledb.open(uri, ctx=CTX) as A:
        if kind == "sparse":
            data = A.query(order="U")[:]
            x, y, v = (data[k].astype(np.uint64) for k in "xyv")
            with np.errstate(over="ignore"):
                mixed = int(((x * np.uint64(1_000_003) + y) * v).sum(dtype=np.uint64))
            return {"cells": len(v), "sums": [int(x.sum()), int(y.sum()), int(v.sum()) & mask, mixed]}
        if kind == "dense":
            # DENSE_BOX of object_store_s3.rs: rows 100..=163, cols 600..=700.
            values = A[100:164, 600:701]["a"].reshape(-1).astype(np.uint64)
            with np.errstate(over="ignore"):
                places = np.arange(1, len(values) + 1, dtype=np.uint64)
                by_place = int((values * places).sum(dtype=np.uint64))
            return {"cells": len(values), "sums": [int(values.sum(dtype=np.uint64)), by_place]}
        strings = A[:]["s"]
    # Order and content both count: each length weighted by its place, each
    # byte of the strings joined by its place.
    lengths = np.array([len(s.encode()) for s in strings], dtype=np.uint64)
    joined = np.frombuffer("".join(strings).encode(), dtype=np.uint8).astype(np.uint64)
    with np.errstate(over="ignore"):
        by_place = int((lengths * np.arange(1, len(lengths) + 1, dtype=np.uint64)).sum(dtype=np.uint64))
        bytes_by_place = int((joined * np.arange(1, len(joined) + 1, dtype=np.uint64)).sum(dtype=np.uint64))
    return {"cells": len(strings), "sums": [by_place, bytes_by_place]}


def open_read(uri):
    with tiledb.open(uri, ctx=CTX) as A:
        data = A[:]
    return {"cells": int(len(data["a"]))}


def plain(value):
    """A metadata or cell value as JSON."""
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.generic):
        return value.item()
    return value


def inspect(uri):
    with tiledb.open(uri, ctx=CTX) as A:
        data = A[:] if A.schema.sparse else A.multi_index[:]
        cells = {name: plain(col) for name, col in data.items()}
        attributes = [A.schema.attr(i).name for i in range(A.schema.nattr)]
        metadata = {k: plain(v) for k, v in A.meta.items()}
    fragments = tiledb.FragmentInfoList(uri, ctx=CTX)
    return {
        "cells": cells,
        "attributes": attributes,
        "metadata": metadata,
        "fragments": len(fragments),
        "consolidated_metadata": [bool(f.has_consolidated_metadata) for f in fragments],
        "to_vacuum": len(fragments.to_vacuum),
    }


def group(uri):
    with tiledb.Group(uri, ctx=CTX) as G:
        members = sorted(
            [m.name or "", m.uri, "array" if m.type == tiledb.Array else "group"] for m in G
        )
        metadata = {k: plain(v) for k, v in G.meta.items()}
    return {"members": members, "metadata": metadata}


def handle(req):
    op = req["op"]
    if op == "replay":
        tdbcase.replay(adapter.load_case(req["case_file"]), req["out"])
        return {"ok": True}
    if op == "read" and "read_id" in req:
        return adapter.read_by_id(req["array_root"], req["case_file"], req["read_id"])
    if op == "read":
        return adapter.read(req["array_root"], req.get("case", {}), req["read"])
    if op == "noop":
        return {"ok": True}
    if op == "fragments":
        return fragments(req["uri"], req["count"])
    if op == "open":
        with tiledb.open(req["uri"], ctx=CTX):
            return {"ok": True}
    if op == "open_read":
        return open_read(req["uri"])
    if op == "one_fragment":
        return one_fragment(req["uri"], req["kind"])
    if op == "summary":
        return summary(req["uri"], req["kind"])
    if op == "create_bucket":
        tiledb.VFS(ctx=CTX).create_bucket(req["uri"])
        return {"ok": True}
    if op == "inspect":
        return inspect(req["uri"])
    if op == "group":
        return group(req["uri"])
    if op == "consolidate_fragment_meta":
        config = tiledb.Config({"sm.consolidation.mode": "fragment_meta"})
        tiledb.consolidate(req["uri"], config=config, ctx=CTX)
        return {"ok": True}
    raise adapter.UsageError(f"unknown op {op!r}")


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = handle(json.loads(line))
        except Exception as e:  # every failure becomes an answer
            answer = {"error": f"{type(e).__name__}: {e}", "class": adapter.classify(e)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
