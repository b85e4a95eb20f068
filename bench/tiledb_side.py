"""The TileDB side of the benchmark: creates the arrays (with TileDB itself)
and times TileDB's reads of them.

    python tiledb_side.py create SPEC_JSON   # one array, described by SPEC
    python tiledb_side.py read SPEC_JSON     # times one workload, prints JSON

Reads are timed inside this process around the query submission alone
(`PyQuery.submit`, the call tiledb-py's `A.query(...)[...]` makes, with the
buffers it sizes from TileDB's own estimates); turning the buffers into
Python objects afterwards is not timed. The "open" workloads time opening
the array. Peak memory is this process's VmHWM after the runs.
"""

import hashlib
import json
import os
import sys
import time

import numpy as np
import tiledb
import tiledb.libtiledb as lt


# Settings a workload passes (`tiledb_config`: the S3 endpoint of
# `bench/run --s3`); none for local arrays.
CONFIG = {}


def ctx():
    # Default configuration: TileDB's own thread pools size themselves to
    # the machine's cores.
    return tiledb.Ctx(tiledb.Config(CONFIG)) if CONFIG else tiledb.Ctx()


def filters(names):
    out = []
    for name in names:
        if name == "zstd1":
            out.append(tiledb.ZstdFilter(level=1))
        elif name == "byteshuffle":
            out.append(tiledb.ByteShuffleFilter())
        elif name == "lz4":
            out.append(tiledb.LZ4Filter())
        elif name == "rle":
            out.append(tiledb.RleFilter())
        elif name == "dictionary":
            out.append(tiledb.DictionaryFilter())
        else:
            raise SystemExit(f"unknown filter {name}")
    return tiledb.FilterList(out)


def create_dense(spec):
    n, tile = spec["side"], spec["tile"]
    dom = tiledb.Domain(
        tiledb.Dim("row", domain=(0, n - 1), tile=tile, dtype=np.int64),
        tiledb.Dim("col", domain=(0, n - 1), tile=tile, dtype=np.int64),
    )
    dtype = np.dtype(spec.get("dtype", "int64"))
    attr = tiledb.Attr("a", dtype=dtype, filters=filters(spec["filters"]))
    schema = tiledb.ArraySchema(domain=dom, attrs=[attr], sparse=False)
    tiledb.Array.create(spec["path"], schema, ctx=ctx())
    rng = np.random.default_rng(spec["seed"])
    with tiledb.open(spec["path"], "w", ctx=ctx()) as A:
        step = max(1, n // 8)
        for r in range(0, n, step):
            rows = min(step, n - r)
            if dtype.kind == "f":
                values = rng.normal(size=(rows, n))
            else:
                # Values below 1000: compressible as integer columns usually are.
                values = rng.integers(0, 1000, size=(rows, n), dtype=np.int64)
            A[r : r + rows, :] = values.astype(dtype)


def create_sparse(spec):
    cells, side = spec["cells"], spec["side"]
    tile = max(1, side // 10)
    dom = tiledb.Domain(
        tiledb.Dim("x", domain=(0, side - 1), tile=tile, dtype=np.int64),
        tiledb.Dim("y", domain=(0, side - 1), tile=tile, dtype=np.int64),
    )
    attr = tiledb.Attr("v", dtype=np.float64, filters=filters(spec["filters"]))
    schema = tiledb.ArraySchema(
        domain=dom, attrs=[attr], sparse=True, capacity=spec["capacity"]
    )
    tiledb.Array.create(spec["path"], schema, ctx=ctx())
    rng = np.random.default_rng(spec["seed"])
    # Distinct random cells: draw a few more, drop repeats, shuffle, trim.
    linear = np.unique(rng.integers(0, side * side, size=int(cells * 1.02) + 16))
    rng.shuffle(linear)
    linear = linear[:cells]
    x, y = linear // side, linear % side
    values = rng.normal(size=len(linear))
    with tiledb.open(spec["path"], "w", ctx=ctx()) as A:
        A[x, y] = {"v": values}


def create_strings(spec):
    cells, tile = spec["cells"], spec["tile"]
    dom = tiledb.Domain(
        tiledb.Dim("i", domain=(0, cells - 1), tile=min(tile, cells), dtype=np.int64)
    )
    attr = tiledb.Attr("s", dtype="ascii", var=True, filters=filters(spec["filters"]))
    schema = tiledb.ArraySchema(domain=dom, attrs=[attr], sparse=False)
    tiledb.Array.create(spec["path"], schema, ctx=ctx())
    rng = np.random.default_rng(spec["seed"])
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    vocab = [
        bytes(rng.choice(letters, size=int(rng.integers(4, 21)))).decode()
        for _ in range(500)
    ]
    # Runs of repeated words (1 to 8 long) over a skewed vocabulary.
    runs = rng.integers(1, 9, size=cells)
    words = np.minimum(rng.zipf(1.3, size=cells) - 1, len(vocab) - 1)
    values = np.repeat(words, runs)[:cells]
    data = np.array([vocab[w] for w in values], dtype=object)
    with tiledb.open(spec["path"], "w", ctx=ctx()) as A:
        A[0:cells] = {"s": data}


def create_fragments(spec):
    count = spec["fragments"]
    dom = tiledb.Domain(
        tiledb.Dim("x", domain=(0, 1_000_000), tile=1000, dtype=np.int64),
    )
    attr = tiledb.Attr("v", dtype=np.int32)
    schema = tiledb.ArraySchema(domain=dom, attrs=[attr], sparse=True)
    tiledb.Array.create(spec["path"], schema, ctx=ctx())
    c = ctx()
    for f in range(count):
        with tiledb.open(spec["path"], "w", timestamp=f + 1, ctx=c) as A:
            xs = np.arange(f * 10, f * 10 + 4, dtype=np.int64)
            A[xs] = {"v": np.full(4, f, dtype=np.int32)}
    if spec["consolidated_metadata"]:
        config = tiledb.Config({"sm.consolidation.mode": "fragment_meta"})
        tiledb.consolidate(spec["path"], config=config, ctx=c)


def create(spec):
    kind = spec["kind"]
    {
        "dense": create_dense,
        "sparse": create_sparse,
        "strings": create_strings,
        "fragments": create_fragments,
    }[kind](spec)


def peak_rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


LAYOUTS = {
    "row-major": lt.LayoutType.ROW_MAJOR,
    "col-major": lt.LayoutType.COL_MAJOR,
    "unordered": lt.LayoutType.UNORDERED,
    "global": lt.LayoutType.GLOBAL_ORDER,
}


def read_once(A, spec):
    from tiledb.main import PyQuery

    schema = A.schema
    attrs = tuple(spec["attrs"])
    dims = tuple(spec.get("dims", []))
    q = PyQuery(A.ctx, A, attrs, dims, LAYOUTS[spec["layout"]], False)
    sub = tiledb.Subarray(A, A.ctx)
    ranges = spec.get("subarray")
    if ranges is None:
        ranges = [
            tuple(int(v) for v in schema.domain.dim(d).domain)
            for d in range(schema.domain.ndim)
        ]
    sub.add_ranges([[tuple(r)] for r in ranges])
    q.set_subarray(sub)
    cpu = time.process_time()
    start = time.perf_counter()
    q.submit()
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    results = q.results()
    nbytes = 0
    cells = 0
    digest = None
    if spec["layout"] in ("row-major", "col-major"):
        # The same digest as `result_digest` in bench/src/main.rs: per field,
        # its data bytes, each var cell's length (u64), its validity bytes.
        h = hashlib.sha256()
        for name in dims + attrs:
            data, offsets = results[name][0], results[name][1]
            h.update(memoryview(np.ascontiguousarray(data)).cast("B"))
            if len(offsets) > 0:
                ends = np.append(offsets[1:], data.nbytes).astype("<u8")
                h.update((ends - offsets.astype("<u8")).astype("<u8").tobytes())
            if len(results[name]) > 2 and results[name][2] is not None and len(results[name][2]) > 0:
                h.update(np.ascontiguousarray(results[name][2]).tobytes())
        digest = h.hexdigest()
    for name in dims + attrs:
        # Raw result buffers, trimmed to what the query wrote.
        data, offsets = results[name][0], results[name][1]
        nbytes += data.nbytes
        if len(offsets) > 0:
            nbytes += offsets.nbytes
            cells = max(cells, len(offsets))
        else:
            dtype = (
                schema.domain.dim(name).dtype
                if schema.domain.has_dim(name)
                else schema.attr(name).dtype
            )
            cells = max(cells, data.nbytes // np.dtype(dtype).itemsize)
    return elapsed, cpu, cells, nbytes, digest


def read(spec):
    times = []
    cpu_times = []
    cells = nbytes = 0
    digest = None
    for _ in range(spec["runs"]):
        if spec["kind"] == "open":
            cpu = time.process_time()
            start = time.perf_counter()
            A = tiledb.open(spec["path"], ctx=ctx())
            times.append(time.perf_counter() - start)
            cpu_times.append(time.process_time() - cpu)
            cells = len(A.schema.domain)
            A.close()
        else:
            with tiledb.open(spec["path"], ctx=ctx()) as A:
                elapsed, cpu, cells, nbytes, digest = read_once(A, spec)
                times.append(elapsed)
                cpu_times.append(cpu)
    print(
        json.dumps(
            {
                "times": times,
                "cpu_times": cpu_times,
                "cells": cells,
                "bytes": nbytes,
                "digest": digest,
                "peak_rss_kib": peak_rss_kib(),
            }
        )
    )


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("create", "read"):
        raise SystemExit(__doc__)
    spec = json.loads(sys.argv[2])
    CONFIG.update(spec.get("tiledb_config") or {})
    if sys.argv[1] == "create":
        create(spec)
    else:
        read(spec)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
