"""TileDB's Arrow tables for runtime/tests/read_arrow.rs: tiledb-py's `return_arrow=True`.

    .venv-tiledb/bin/python runtime/tests/arrow/oracle.py OUT_DIR ARRAY_DIR...

Pinned to tiledb-py 0.36.1 (TileDB 2.30). For the i-th array it reads every cell, as
`A.query(return_arrow=True, dims=..., attrs=..., order=...).df[...]` does (sparse: every cell
in global order; dense: the non-empty domain in row-major order), and writes

    OUT_DIR/<i>.arrow   the table, as an Arrow IPC file (one record batch, or none when empty)
    OUT_DIR/<i>.json    {"array", "dims", "attrs", "order", "dropped": {field: TileDB's error}}
                        or {"array", "skipped": why}

    .venv-tiledb/bin/python runtime/tests/arrow/oracle.py --reads READS.json OUT_DIR

runs the reads of READS.json instead, each {"array", "ranges": [[dim, [[lo, hi], ...]], ...],
"attrs", "order"} (bounds of date and time dimensions as ISO-8601 text), and writes OUT_DIR/<i>.arrow
for the i-th (all dimensions and the attributes asked for).

Fields tiledb-py cannot return as Arrow (multi-value and var-sized numbers, some date and time
units, BLOB) are dropped, each with the error TileDB gave for it alone.

tiledb-py's `.df` indexer imports pandas only to attach pandas metadata to the table; this
venv has no pandas, so a stand-in module with the few names that code touches is installed
(after pyarrow has looked for pandas and found none). The table's columns are TileDB's.
"""

import json
import os
import sys
import types

import numpy as np
import pyarrow as pa

pa.array(np.array(["x"]))  # pyarrow looks for pandas once, now, and remembers none
if "pandas" not in sys.modules:
    stand_in = types.ModuleType("pandas")
    stand_in.__version__ = "2.2.3"
    for width in ["Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"]:
        setattr(stand_in, width + "Dtype", (lambda name: (lambda: name))(width))
    sys.modules["pandas"] = stand_in

import tiledb  # noqa: E402

assert tiledb.__version__ == "0.36.1", tiledb.__version__


def read(A, dims, attrs):
    order = "G" if A.schema.sparse else "C"
    q = A.query(return_arrow=True, dims=dims, attrs=attrs, order=order)
    if A.schema.sparse:
        return q.df[:], order
    ned = A.nonempty_domain()
    return q.df[tuple(slice(lo, hi) for lo, hi in ned)], order


def table_for(path):
    if tiledb.object_type(path) != "array":
        return None, {"skipped": "not an array"}
    try:
        A = tiledb.open(path)
    except tiledb.TileDBError as e:
        return None, {"skipped": f"TileDB cannot open it: {e}"}
    with A:
        if not A.schema.sparse and A.nonempty_domain() is None:
            return None, {"skipped": "an empty dense array"}
        dims = [d.name for d in A.schema.domain]
        attrs = [A.schema.attr(i).name for i in range(A.schema.nattr)]
        dropped = {}
        for name in dims + attrs:
            try:
                read(A, [name] if name in dims else [], [name] if name in attrs else [])
            except Exception as e:  # noqa: BLE001 - TileDB's refusal is the data
                dropped[name] = str(e).splitlines()[0]
        dims = [d for d in dims if d not in dropped]
        attrs = [a for a in attrs if a not in dropped]
        if not dims and not attrs:
            return None, {"skipped": "no field TileDB returns as Arrow", "dropped": dropped}
        table, order = read(A, dims, attrs)
        return table.combine_chunks(), {"dims": dims, "attrs": attrs, "order": order, "dropped": dropped}


def bound(dim, value):
    if np.issubdtype(dim.dtype, np.datetime64):
        return np.datetime64(value).astype(dim.dtype)
    return value


def run_reads(reads_file, out):
    with open(reads_file) as f:
        reads = json.load(f)
    for i, r in enumerate(reads):
        with tiledb.open(r["array"]) as A:
            dims = [d.name for d in A.schema.domain]
            selection = []
            for d in A.schema.domain:
                ranges = dict(r["ranges"]).get(d.name)
                if ranges is None:
                    selection.append(slice(None))
                else:
                    selection.append([slice(bound(d, lo), bound(d, hi)) for lo, hi in ranges])
            q = A.query(return_arrow=True, dims=dims, attrs=r["attrs"], order=r["order"])
            try:
                table = q.df[tuple(selection)].combine_chunks()
            except tiledb.TileDBError as e:
                sys.exit(f"read {i} ({r['array']}): {e}")
        with pa.ipc.new_file(os.path.join(out, f"{i}.arrow"), table.schema.remove_metadata()) as w:
            for batch in table.to_batches():
                w.write_batch(batch.replace_schema_metadata(None))


def main():
    if sys.argv[1] == "--reads":
        return run_reads(sys.argv[2], sys.argv[3])
    out = sys.argv[1]
    for i, path in enumerate(sys.argv[2:]):
        table, spec = table_for(path)
        spec["array"] = path
        if table is not None:
            schema = table.schema.remove_metadata()
            with pa.ipc.new_file(os.path.join(out, f"{i}.arrow"), schema) as writer:
                for batch in table.to_batches():
                    writer.write_batch(batch.replace_schema_metadata(None))
        with open(os.path.join(out, f"{i}.json"), "w") as f:
            json.dump(spec, f)


if __name__ == "__main__":
    main()
