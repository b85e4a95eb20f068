"""Dump TileDB's reads of TileDB's legacy test arrays as canonical JSON.

Run with the oracle venv (tiledb-py 0.36.1, TileDB 2.30):

    /work/.venv-tiledb/bin/python conformance/scripts/legacy_expected.py \
        ../shared/tiledb-test-arrays conformance/legacy

For each array it writes `legacy.<array>.expected.json`: `{"array", "format_version", "source",
"tiledb", "tiledb_py", "reads": [...]}` (the runner's legacy producers compare with it, and
runtime/tests/read_legacy.rs too),
each read as in a corpus `expected.json` (conformance/README.md), produced by the same code
the corpus generator uses (`tdbcase.read_cells`). Arrays TileDB refuses get `{"error": msg}`.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tiledb  # noqa: E402

import tdbcase  # noqa: E402

PINNED_TILEDB_PY = "0.36.1"
# The arrays and their format versions.
ARRAYS = {"non_split_coords_v1_4_0": 1, "zero_var_chunks_v10": 10, "sparse_array_v11": 11}
READS = [
    {"id": "row-major", "layout": "row-major"},
    {"id": "col-major", "layout": "col-major"},
    {"id": "global", "layout": "global"},
    {"id": "unordered", "layout": "unordered"},
]


# Reads that make TileDB 2.30 crash: no answer to record.
CRASHES = {"zero_var_chunks_v10": ("row-major", "col-major")}
ORDERS = {"row-major": "C", "col-major": "F", "global": "G", "unordered": "U"}


def read_high_level(uri, read, ctx):
    """All cells through `Array.query(order=...)[:]`.

    `tdbcase.read_cells` sets the non-empty domain as the subarray; on an array whose only
    string coordinate is "" that makes TileDB 2.30 crash (segmentation fault), so these
    legacy arrays are read without a subarray.
    """
    import numpy as np

    with tiledb.open(uri, "r", ctx=ctx) as A:
        fields = tdbcase.actual_fields(A)
        result = A.query(order=ORDERS[read["layout"]])[:]
        columns = []
        for name, kind, t, cvn, nullable in fields:
            values = result[name]
            if cvn == "var":
                cells = [bytes(v) if not isinstance(v, np.ndarray) else v.tobytes() for v in values]
                data = b"".join(cells)
                offsets, at = [], 0
                for c in cells:
                    offsets.append(at)
                    at += len(c)
                columns.append(tdbcase.decode_column(t, cvn, data, offsets, None))
            else:
                raw = np.ascontiguousarray(values).tobytes()
                columns.append(tdbcase.decode_column(t, cvn, raw, None, None))
        return {
            "fields": [{"name": n, "kind": k, "type": t, "cell_val_num": c, "nullable": nl} for n, k, t, c, nl in fields],
            "ordered": read["layout"] != "unordered",
            "cells": [list(r) for r in zip(*columns)],
        }


def main():
    if tiledb.__version__ != PINNED_TILEDB_PY:
        sys.exit(f"tiledb-py {tiledb.__version__} is not the pinned {PINNED_TILEDB_PY}")
    source, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    ctx = tiledb.Ctx()
    for name, format_version in ARRAYS.items():
        uri = os.path.join(source, name)
        doc = {
            "array": name,
            "format_version": format_version,
            "source": f"tiledb-test-arrays/{name}",
            "tiledb": ".".join(map(str, tiledb.libtiledb.version())),
            "tiledb_py": tiledb.__version__,
            "reads": [],
        }
        for read in READS:
            if read["id"] in CRASHES.get(name, ()):
                doc.setdefault("skipped", []).append(
                    {"id": read["id"], "reason": "TileDB 2.30 crashes (segmentation fault) on this read"}
                )
                continue
            try:
                result = read_high_level(uri, read, ctx)
                doc["reads"].append({"id": read["id"], **read, **result})
            except tiledb.TileDBError as e:
                doc["reads"].append({"id": read["id"], **read, "error": str(e)})
        with open(os.path.join(out_dir, f"legacy.{name}.expected.json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print(name, [len(r.get("cells", [])) for r in doc["reads"]])


if __name__ == "__main__":
    main()
