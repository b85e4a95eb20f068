"""The oracle of runtime/tests/conditions_oracle.rs (tiledb-py 0.36.1,
TileDB 2.30).

`make DIR SEED`: writes random arrays (sparse and dense; nullable ints,
floats with NaN and -0.0, nullable strings, a string enumeration) into DIR.
`answer ARRAY...`: for each array, draws conditions from its own values and
prints, as a JSON line, TileDB's cells for each (`A.query(cond=...)`) and its
aggregates (`A.query(cond=...).agg(...)`).
`delete ARRAY COND TIMESTAMP...`: deletes with TileDB, each triple in turn.
`cells ARRAY...`: TileDB's cells of each array, a JSON line each.
"""
import json, random, struct, sys
import numpy as np
import tiledb


def canon(v, dtype):
    """A cell as JSON both sides can build: ints, floats as their f64 bits
    (NaN as "nan"), strings and bytes as hex, null as None."""
    if v is None or v is np.ma.masked:
        return None
    if isinstance(v, (str, np.str_)):
        return v.encode().hex()
    if isinstance(v, (bytes, np.bytes_)):
        return bytes(v).hex()
    if np.issubdtype(dtype, np.datetime64):
        return int(np.int64(v.astype("int64") if hasattr(v, "astype") else v))
    if np.issubdtype(dtype, np.floating):
        f = float(v)
        return "nan" if f != f else str(struct.unpack("<Q", struct.pack("<d", f))[0])
    if np.issubdtype(dtype, np.bool_):
        return int(bool(v))
    return int(v)


def rows(A, result):
    schema = A.schema
    names = [schema.domain.dim(i).name for i in range(schema.domain.ndim)] + [
        schema.attr(i).name for i in range(schema.nattr)]
    out = []
    n = result[names[-1]].size
    for i in range(n):
        row = []
        for name in names:
            col = result[name].ravel()
            dt = schema.attr_or_dim_dtype(name)
            v = col[i]
            if schema.has_attr(name) and schema.attr(name).enum_label is not None:
                enum = A.enum(schema.attr(name).enum_label)
                dt = enum.dtype
                if isinstance(v, (int, np.integer)) and dt.kind not in "iuf":
                    v = list(enum.values())[int(v)]  # an index: its value
                elif dt.kind in "iuf" and isinstance(v, (int, np.integer)) and not isinstance(v, type(enum.values()[0])):
                    v = enum.values()[int(v)]
            row.append(canon(v, dt))
        out.append(row)
    return out


def read(A, cond=None):
    if A.schema.sparse:
        return A.query(cond=cond)[:]
    ned = A.nonempty_domain()
    return A.query(cond=cond, order="C", coords=True)[tuple(slice(lo, hi + 1) for lo, hi in ned)]


def literal(v, dtype):
    if isinstance(v, str):
        return repr(v)
    if np.issubdtype(dtype, np.floating):
        return repr(float(v))
    return str(int(v))


def conditions(A, rng):
    """Conditions drawn from the array's own values."""
    schema = A.schema
    if not schema.sparse and any(np.issubdtype(schema.domain.dim(i).dtype, np.datetime64) for i in range(schema.domain.ndim)):
        return []  # tiledb-py's datetime slices end elsewhere than `hi + 1`
    data = A.query()[:] if schema.sparse else read(A)
    fields = [schema.attr(i) for i in range(schema.nattr)]
    out = []
    if schema.sparse:
        fields += [schema.domain.dim(i) for i in range(schema.domain.ndim)]
    for f in fields:
        is_attr = isinstance(f, tiledb.Attr)
        if is_attr and f.ncells != 1 and f.dtype.kind not in "SUO":
            continue
        dt = f.dtype
        if np.issubdtype(dt, np.datetime64) or np.issubdtype(dt, np.bool_) or dt.kind == "V":
            continue
        if is_attr and f.enum_label is not None:
            values = list(A.enum(f.enum_label).values())
            if not all(isinstance(v, str) for v in values):
                continue
            dt = np.dtype("U")
        else:
            col = data[f.name]
            values = list(col.compressed() if hasattr(col, "compressed") else np.ravel(col))
            values = [v for v in values if np.ndim(v) == 0 and v == v]
            if dt.kind in "SU" or dt == np.dtype("O"):
                values = [v.decode() if isinstance(v, bytes) else str(v) for v in values]
                if any(not v.isprintable() or not v.isascii() for v in values):
                    continue
            if not values:
                continue
        name = f"attr({f.name!r})" if is_attr else f"dim({f.name!r})"
        pick = lambda: literal(rng.choice(values), dt)
        ordered = not (is_attr and f.enum_label is not None)
        ops = ["<", "<=", ">", ">=", "==", "!="] if ordered else ["==", "!="]
        for op in rng.sample(ops, min(3, len(ops))):
            out.append(f"{name} {op} {pick()}")
        # tiledb-py takes no negative number in a list.
        members = [v for v in values if isinstance(v, str) or v >= 0] or values[:0]
        pick_member = lambda: literal(rng.choice(members), dt)
        if members:
            out.append(f"{name} in [{pick_member()}, {pick_member()}]")
        # `not (x not in [v])` made TileDB 2.30 crash (uint16, seed 1).
        if members:
            out.append(f"{name} not in [{pick_member()}, {pick_member()}]")
        if is_attr and f.isnullable:
            out.append(f"{name} == None")
            out.append(f"not {name} != None or {name} == {pick()}")
        if ordered:
            out.append(f"{pick()} < {name} <= {pick()} and not ({name} == {pick()})")
    rng.shuffle(out)
    return out[:24]


def aggregates(A, cond):
    schema = A.schema
    out = {}
    for i in range(schema.nattr):
        a = schema.attr(i)
        if a.ncells != 1 or a.dtype.kind not in "iuf" or a.enum_label is not None:
            continue
        ops = ["sum", "min", "max", "mean", "count"] + (["null_count"] if a.isnullable else [])
        q = A.query(cond=cond).agg({a.name: ops})
        if schema.sparse:
            r = q[:]
        else:
            ned = A.nonempty_domain()
            r = q[tuple(slice(lo, hi + 1) for lo, hi in ned)]
        r = r if isinstance(r, dict) and a.name not in r else r[a.name]
        out[a.name] = {op: (None if r[op] is None else canon(r[op], np.dtype(type(r[op])) if not isinstance(r[op], float) else np.dtype("f8"))) for op in ops}
    return out


def make(dirname, seed):
    rng = np.random.default_rng(seed)
    enmr = tiledb.Enumeration("colors", False, ["red", "green", "blue", "b", ""])
    for kind in ["sparse", "dense"]:
        uri = f"{dirname}/{kind}-{seed}"
        n = 60
        dims = [tiledb.Dim("x", domain=(0, 19), tile=5, dtype=np.int32),
                tiledb.Dim("y", domain=(-5, 4), tile=4, dtype=np.int64) if kind == "sparse" else tiledb.Dim("y", domain=(0, 9), tile=4, dtype=np.int32)]
        attrs = [tiledb.Attr("i", dtype=np.int32, nullable=True),
                 tiledb.Attr("u", dtype=np.uint16),
                 tiledb.Attr("f", dtype=np.float64),
                 tiledb.Attr("g", dtype=np.float32, nullable=True),
                 tiledb.Attr("s", dtype=str, var=True, nullable=True)]
        enums = []
        if kind == "sparse":
            attrs.append(tiledb.Attr("e", dtype=np.uint8, enum_label="colors"))
            enums = [enmr]
        schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs, sparse=kind == "sparse",
                                    capacity=8, allows_duplicates=False, enums=enums)
        tiledb.Array.create(uri, schema)
        for frag in range(2):
            if kind == "sparse":
                cells = rng.choice(200, size=n, replace=False)
                x, y = (cells // 10).astype(np.int32), (cells % 10 - 5).astype(np.int64)
            else:
                n = 40
            def nullable(v, p=0.2):
                return np.array([None if rng.random() < p else x for x in v], dtype=object)
            ints = rng.integers(-50, 50, n)
            floats = rng.choice([0.0, -0.0, 1.5, -2.25, np.nan, np.inf, 7.0, 3.0], n)
            strings = [str(rng.choice(["", "a", "ab", "abc", "b", "ba", "z", "m\u00e9"])) for _ in range(n)]
            data = {"i": nullable(ints), "u": rng.integers(0, 60000, n).astype(np.uint16), "f": floats,
                    "g": nullable(floats.astype(np.float32)), "s": nullable(strings)}
            if kind == "sparse":
                data["e"] = rng.integers(0, 5, n).astype(np.uint8)
            with tiledb.open(uri, "w", timestamp=frag + 1) as A:
                if kind == "sparse":
                    A[x, y] = data
                else:
                    # Dense nullable cells: values with a validity map.
                    nullmaps, values = {}, {}
                    for k, v in data.items():
                        if v.dtype == object and k != "s":
                            nullmaps[k] = np.array([x is not None for x in v], dtype=np.uint8)
                            v = np.array([0 if x is None else x for x in v], dtype=A.schema.attr(k).dtype)
                        elif k == "s":
                            nullmaps[k] = np.array([x is not None for x in v], dtype=np.uint8)
                            v = np.array(["" if x is None else x for x in v], dtype=object)
                        values[k] = v.reshape(4, 10)
                    A._setitem_impl((slice(frag * 2, frag * 2 + 4), slice(0, 10)), values, nullmaps)


def make_sums(dirname, seed):
    """A sparse array whose integer sums pass 2^62 and overflow, and whose
    floats hold NaN and infinities: aggregates whose answer depends on the
    order TileDB visits tiles in."""
    rng = np.random.default_rng(seed)
    uri = f"{dirname}/sums-{seed}"
    dims = [tiledb.Dim("x", domain=(0, 999), tile=100, dtype=np.int64)]
    attrs = [tiledb.Attr("big", dtype=np.int64), tiledb.Attr("ubig", dtype=np.uint64),
             tiledb.Attr("h", dtype=np.float64)]
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs, sparse=True,
                                capacity=16, allows_duplicates=False)
    tiledb.Array.create(uri, schema)
    n = 80
    x = np.sort(rng.choice(1000, size=n, replace=False)).astype(np.int64)
    big = rng.integers(2**60, 2**62, n, dtype=np.int64) * rng.choice([1, 1, 1, -1], n)
    ubig = rng.integers(2**61, 2**62, n, dtype=np.uint64) * np.uint64(2)
    h = rng.choice([1.5, -2.25, np.nan, np.inf, -np.inf, 1e308, -0.0], n)
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[x] = {"big": big, "ubig": ubig, "h": h}


def answer(uri):
    """The drawn conditions of the array at `uri` with TileDB's rows and
    aggregates for each: `{"uri", "cases"}`, or `{"uri", "skipped"}`."""
    # The same draws for an array whichever arrays came before it.
    rng = random.Random(7)
    try:
        with tiledb.open(uri) as A:
            cases = []
            try:
                drawn = conditions(A, rng)
            except Exception as e:  # a layout this drawer does not handle
                print(uri, "no conditions:", e, file=sys.stderr)
                drawn = []
            for c in drawn:
                case = {"cond": c}
                try:
                    case["rows"] = rows(A, read(A, c))
                except tiledb.TileDBError as e:
                    case["error"] = str(e)[:200]
                try:
                    case["agg"] = aggregates(A, c)
                except tiledb.TileDBError as e:
                    case["agg_error"] = str(e)[:200]
                cases.append(case)
            # The aggregates with no condition (answered from tile
            # metadata where TileDB's rules allow).
            if drawn:
                try:
                    cases.append({"cond": None, "agg": aggregates(A, None)})
                except tiledb.TileDBError as e:
                    cases.append({"cond": None, "agg_error": str(e)[:200]})
            return {"uri": uri, "cases": cases}
    except Exception as e:  # a cell type `canon` does not render
        print(uri, "skipped:", e, file=sys.stderr)
        return {"uri": uri, "skipped": str(e)[:200]}


def main():
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2], int(sys.argv[3]))
        make_sums(sys.argv[2], int(sys.argv[3]))
    elif cmd == "answer":
        # One line per array, written as soon as it is answered: when TileDB
        # crashes on an array, the lines before it stand and the caller goes
        # on from the next array in a new process.
        for uri in sys.argv[2:]:
            print(json.dumps(answer(uri)), flush=True)
    elif cmd == "delete":
        # URI CONDITION TIMESTAMP, once or more.
        args = sys.argv[2:]
        for uri, cond, timestamp in zip(args[0::3], args[1::3], args[2::3]):
            with tiledb.open(uri, "d", timestamp=int(timestamp)) as A:
                A.query(cond=cond).submit()
    elif cmd == "cells":
        # One line per array.
        for uri in sys.argv[2:]:
            with tiledb.open(uri) as A:
                print(json.dumps(sorted(rows(A, read(A)), key=json.dumps)))


main()
