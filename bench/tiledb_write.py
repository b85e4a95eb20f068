"""The TileDB side of the write benchmark (see bench/write_workloads.py).

    python tiledb_write.py prepare SPEC_JSON  # empty array + input data files
    python tiledb_write.py write SPEC_JSON    # times TileDB's writes, prints JSON
    python tiledb_write.py cells SPEC_JSON    # digest of the cells TileDB reads

`prepare` creates, under SPEC["dir"], `template/` (the empty array, or for
"consolidate" the array with its many small fragments) and the raw input
columns as little-endian `.bin` files, which both sides load before timing.
Each timed run copies the template to SPEC["out"] (not timed) and times the
query submission and finalisation alone; peak memory is this process's VmHWM.
"""

import hashlib
import json
import os
import shutil
import sys
import time

import numpy as np
import tiledb
import tiledb.libtiledb as lt

from tiledb_side import filters, peak_rss_kib


def save(spec, name, values):
    np.ascontiguousarray(values).tofile(os.path.join(spec["dir"], name + ".bin"))


def load(spec, name, dtype):
    return np.fromfile(os.path.join(spec["dir"], name + ".bin"), dtype=dtype)


def prepare(spec):
    template = os.path.join(spec["dir"], "template")
    rng = np.random.default_rng(spec["seed"])
    kind = spec["kind"]
    if kind == "dense":
        n, tile = spec["side"], spec["tile"]
        dom = tiledb.Domain(
            tiledb.Dim("row", domain=(0, n - 1), tile=tile, dtype=np.int64),
            tiledb.Dim("col", domain=(0, n - 1), tile=tile, dtype=np.int64),
        )
        attr = tiledb.Attr("a", dtype=np.int64, filters=filters(spec["filters"]))
        schema = tiledb.ArraySchema(domain=dom, attrs=[attr], sparse=False)
        save(spec, "a", rng.integers(0, 1000, size=n * n, dtype=np.int64))
    elif kind == "sparse":
        cells, side, tile = spec["cells"], spec["side"], spec["tile"]
        dom = tiledb.Domain(
            tiledb.Dim("x", domain=(0, side - 1), tile=tile, dtype=np.int64),
            tiledb.Dim("y", domain=(0, side - 1), tile=tile, dtype=np.int64),
        )
        attr = tiledb.Attr("v", dtype=np.float64, filters=filters(spec["filters"]))
        schema = tiledb.ArraySchema(
            domain=dom, attrs=[attr], sparse=True, capacity=spec["capacity"]
        )
        linear = np.unique(rng.integers(0, side * side, size=int(cells * 1.02) + 16))
        rng.shuffle(linear)
        linear = linear[:cells]
        x, y = linear // side, linear % side
        v = rng.normal(size=len(linear))
        if spec["order"] == "global":
            # Row-major tiles, row-major cells within a tile.
            order = np.lexsort((y, x, y // tile, x // tile))
            x, y, v = x[order], y[order], v[order]
        save(spec, "x", x.astype("<i8"))
        save(spec, "y", y.astype("<i8"))
        save(spec, "v", v.astype("<f8"))
    elif kind == "strings":
        cells = spec["cells"]
        dom = tiledb.Domain(
            tiledb.Dim("i", domain=(0, cells - 1), tile=min(spec["tile"], cells), dtype=np.int64)
        )
        attr = tiledb.Attr("s", dtype="ascii", var=True, filters=filters(spec["filters"]))
        schema = tiledb.ArraySchema(domain=dom, attrs=[attr], sparse=False)
        lengths = rng.integers(4, 21, size=cells)
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype("<u8")
        data = rng.integers(ord("a"), ord("z") + 1, size=int(lengths.sum()), dtype=np.uint8)
        save(spec, "s", data)
        save(spec, "s.offsets", offsets)
    elif kind == "consolidate":
        dom = tiledb.Domain(
            tiledb.Dim("x", domain=(0, 1_000_000_000), tile=1000, dtype=np.int64)
        )
        attr = tiledb.Attr("v", dtype=np.int64, filters=filters(spec["filters"]))
        schema = tiledb.ArraySchema(domain=dom, attrs=[attr], sparse=True)
    else:
        raise SystemExit(f"unknown kind {kind}")
    tiledb.Array.create(template, schema, ctx=tiledb.Ctx())
    if kind == "consolidate":
        per = spec["cells_per_fragment"]
        for f in range(spec["fragments"]):
            with tiledb.open(template, "w", timestamp=f + 1) as A:
                xs = rng.integers(0, 1_000_000_000, size=per * 2)
                xs = np.unique(xs)[:per].astype(np.int64)
                A[xs] = {"v": rng.integers(0, 1 << 40, size=len(xs))}


def write_once(spec, path):
    kind = spec["kind"]
    if kind == "consolidate":
        start, cpu = time.perf_counter(), time.process_time()
        tiledb.consolidate(path, ctx=tiledb.Ctx())
        return time.perf_counter() - start, time.process_time() - cpu
    with tiledb.open(path, "w") as A:
        q = lt.Query(A.ctx, A.array, lt.QueryType.WRITE)
        buffers = []
        if kind == "dense":
            n = spec["side"]
            q.layout = lt.LayoutType.ROW_MAJOR
            sub = tiledb.Subarray(A, A.ctx)
            sub.add_ranges([[(0, n - 1)], [(0, n - 1)]])
            q.set_subarray(sub)
            buffers = [("a", load(spec, "a", "<i8"), None)]
        elif kind == "sparse":
            q.layout = (
                lt.LayoutType.GLOBAL_ORDER
                if spec["order"] == "global"
                else lt.LayoutType.UNORDERED
            )
            buffers = [(d, load(spec, d, t), None) for d, t in [("x", "<i8"), ("y", "<i8"), ("v", "<f8")]]
        else:
            n = spec["cells"]
            q.layout = lt.LayoutType.ROW_MAJOR
            sub = tiledb.Subarray(A, A.ctx)
            sub.add_ranges([[(0, n - 1)]])
            q.set_subarray(sub)
            buffers = [("s", load(spec, "s", np.uint8), load(spec, "s.offsets", "<u8"))]
        for name, data, offsets in buffers:
            q.set_data_buffer(name, data, len(data))
            if offsets is not None:
                q.set_offsets_buffer(name, offsets, len(offsets))
        # CPU time of every thread of the process (TileDB's pools included).
        start, cpu = time.perf_counter(), time.process_time()
        q._submit()
        q.finalize()
        return time.perf_counter() - start, time.process_time() - cpu


def write(spec):
    times, cpu_times = [], []
    for _ in range(spec["runs"]):
        if os.path.exists(spec["out"]):
            shutil.rmtree(spec["out"])
        shutil.copytree(os.path.join(spec["dir"], "template"), spec["out"])
        wall, cpu = write_once(spec, spec["out"])
        times.append(wall)
        cpu_times.append(cpu)
    print(json.dumps({"times": times, "cpu_times": cpu_times, "peak_rss_kib": peak_rss_kib()}))


def cells(spec):
    """A digest of every cell TileDB reads from SPEC["out"], with its
    coordinates, sorted by coordinates (so any write order compares)."""
    with tiledb.open(spec["out"]) as A:
        result = A.query(order="U")[:] if A.schema.sparse else A[:]
        dims = [A.schema.domain.dim(i).name for i in range(A.schema.domain.ndim)]
        sparse = A.schema.sparse
    fragments = len(tiledb.array_fragments(spec["out"]))
    h = hashlib.sha256()
    if sparse:
        order = np.lexsort([result[d] for d in reversed(dims)])
        result = {k: np.asarray(v)[order] for k, v in result.items()}
    count = 0
    for name in sorted(result):
        values = result[name]
        count = values.size
        if values.dtype == object:
            for s in values:
                h.update(len(s).to_bytes(8, "little") + bytes(s))
        else:
            h.update(np.ascontiguousarray(values).tobytes())
    print(json.dumps({"cells": count, "digest": h.hexdigest(), "fragments": fragments}))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("prepare", "write", "cells"):
        raise SystemExit(__doc__)
    spec = json.loads(sys.argv[2])
    {"prepare": prepare, "write": write, "cells": cells}[sys.argv[1]](spec)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
