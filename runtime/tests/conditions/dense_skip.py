"""The oracle of runtime/tests/conditions_skip_dense.rs (tiledb-py 0.36.1,
TileDB 2.30).

`make URI`: a dense array of INT64 `d` in 1..=20000, tiles of 500 cells:
INT64 `v = 3 d`, nullable FLOAT64 `f = d / 2` (null every 7th cell, NaN
every 11th from d = 19000 on), a string `s` filled with "zz"; a newer
fragment over d 1000..=3000 (`v = 100000 + d`, `f = -d`, `s = "n" d`) and
a newest one over part of a tile, d 15001..=15250 (`v = 7`).
`answer URI COND...`: for each condition, as JSON, TileDB's cells
(`A.query(cond=...)`) over the whole domain and over two ranges (read one
after the other), and its
aggregates over the whole domain.
`agg URI LO:HI...`: TileDB's aggregates (no condition) over each range.
`strings URI sparse|dense`: an array of a nullable ASCII string attribute.
`agg_strings URI LO:HI...`: TileDB's count and null count of it over each
range, and the minimum and maximum of TileDB's cells there.
"""
import json, struct, sys
import numpy as np
import tiledb

ROWS = 20000
RANGES = [(1, 5000), (8000, 12000)]


def canon(v, kind):
    if v is None or v is np.ma.masked:
        return None
    if kind == "s":
        return v.encode().hex() if isinstance(v, str) else bytes(v).hex()
    if kind == "f":
        f = float(v)
        return "nan" if f != f else str(struct.unpack("<Q", struct.pack("<d", f))[0])
    return int(v)


def cells(result):
    out = {}
    for name in ["v", "f", "s"]:
        col = result[name]
        mask = np.ma.getmaskarray(col) if np.ma.isMaskedArray(col) else None
        out[name] = [None if mask is not None and mask[i] else canon(x, name)
                     for i, x in enumerate(np.ravel(col))]
    return out


def make(uri):
    dom = tiledb.Domain(tiledb.Dim("d", domain=(1, ROWS), tile=500, dtype=np.int64))
    attrs = [tiledb.Attr("v", dtype=np.int64),
             tiledb.Attr("f", dtype=np.float64, nullable=True),
             tiledb.Attr("s", dtype=str, var=True, fill="zz")]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=attrs, sparse=False))

    def write(lo, hi, at, v, f, s):
        d = np.arange(lo, hi + 1)
        with tiledb.open(uri, "w", timestamp=at) as A:
            A[lo:hi + 1] = {"v": np.array([v(x) for x in d], dtype=np.int64),
                            "f": np.array([f(x) for x in d], dtype=object),
                            "s": np.array([s(x) for x in d], dtype=object)}

    def f1(x):
        if x % 7 == 0:
            return None
        return float("nan") if x >= 19000 and x % 11 == 0 else x / 2

    write(1, ROWS, 1, lambda x: 3 * x, f1, str)
    write(1000, 3000, 2, lambda x: 100000 + x, lambda x: -float(x), lambda x: f"n{x}")
    write(15001, 15250, 3, lambda x: 7, lambda x: 1.0, lambda x: "seven")


def answer(uri, conds):
    out = []
    with tiledb.open(uri) as A:
        for cond in conds:
            whole = cells(A.query(cond=cond)[1:ROWS + 1])
            # tiledb-py 0.36's multi_index drops validity: each range read
            # on its own, in order (one dimension: the same cells).
            parts = [cells(A.query(cond=cond)[lo:hi + 1]) for lo, hi in RANGES]
            ranges = {k: sum((p[k] for p in parts), []) for k in parts[0]}
            r = A.query(cond=cond).agg({"v": ["count", "sum", "min", "max"], "f": ["null_count"]})[1:ROWS + 1]
            agg = {}
            for name, ops in [("v", ["count", "sum", "min", "max"]), ("f", ["null_count"])]:
                for op in ops:
                    x = r[name][op]
                    agg[f"{op}:{name}"] = None if x is None else int(x)
            out.append({"cond": cond, "whole": whole, "ranges": ranges, "agg": agg})
    print(json.dumps(out))


def agg(uri, ranges):
    out = []
    ops = {"v": ["count", "sum", "min", "max"], "f": ["null_count"]}
    with tiledb.open(uri) as A:
        for r in ranges:
            lo, hi = (int(x) for x in r.split(":"))
            result = A.query().agg(ops)[lo:hi + 1]
            out.append({f"{op}:{name}": int(result[name][op]) for name in ops for op in ops[name]})
    print(json.dumps(out))


def make_strings(uri, sparse):
    """An ASCII string attribute `s` (nullable: every 13th cell null) over
    INT64 `d` in 1..=20000, tiles of 500 cells, sparse or dense."""
    dom = tiledb.Domain(tiledb.Dim("d", domain=(1, ROWS), tile=500, dtype=np.int64))
    attrs = [tiledb.Attr("s", dtype="ascii", var=True, nullable=True)]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=attrs, sparse=sparse, capacity=500))
    d = np.arange(1, ROWS + 1)
    s = np.array([None if x % 13 == 0 else f"k{(x * 7919) % 100003:06d}".encode() for x in d], dtype=object)
    with tiledb.open(uri, "w", timestamp=1) as A:
        if sparse:
            A[d] = {"s": s}
        else:
            A[1:ROWS + 1] = {"s": s}


def agg_strings(uri, ranges):
    """tiledb-py 0.36 cannot return a string aggregate ("Aggregate must have
    a fixed size buffer"): the count and null count are TileDB's, the
    minimum and maximum those of TileDB's cells compared byte-wise (as
    TileDB's aggregator compares strings)."""
    out = []
    with tiledb.open(uri) as A:
        for r in ranges:
            lo, hi = (int(x) for x in r.split(":"))
            result = A.query().agg({"s": ["count", "null_count"]})[lo:hi + 1]
            col = A.query(attrs=["s"])[lo:hi + 1]["s"]
            mask = np.ma.getmaskarray(col) if np.ma.isMaskedArray(col) else np.zeros(len(col), bool)
            values = [bytes(v) for v, m in zip(np.ravel(col), mask) if not m]
            out.append({"count": int(result["count"]), "null_count": int(result["null_count"]),
                        "min": min(values).hex(), "max": max(values).hex()})
    print(json.dumps(out))


COMMANDS = {
    "make": lambda args: make(args[0]),
    "answer": lambda args: answer(args[0], args[1:]),
    "agg": lambda args: agg(args[0], args[1:]),
    "strings": lambda args: make_strings(args[0], args[1] == "sparse"),
    "agg_strings": lambda args: agg_strings(args[0], args[1:]),
}

if __name__ == "__main__":
    COMMANDS[sys.argv[1]](sys.argv[2:])
