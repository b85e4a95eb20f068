#!/usr/bin/env python3
"""TileDB 2.30 (tiledb-py) as the oracle of the schema builder and the validated writes.

Serves one JSON request a line on stdin, one JSON answer a line on stdout:

    {"op": "create", "uri": U, "schema": S}               -> {"ok": true} | {"error": msg}
    {"op": "write", "uri": U, "schema": S, "step": W}     -> {"ok": true} | {"error": msg}
    {"op": "read", "uri": U, "read": R, "case": C}        -> canonical result | {"error": msg}

S and W are the conformance recipe's [schema] and write step (conformance/README.md), built
with conformance/scripts/tdbcase.py. A write step may also name `no_validity` (nullable fields
given without validity), list validity for fields that are not nullable, and give `raw_offsets`
(a var field's cell starts, replacing those of its values): the buffers are set as given, so
that TileDB's own refusal is what answers.
"""

import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "conformance", "scripts"))

import tdbcase  # noqa: E402
import numpy as np  # noqa: E402
import tiledb  # noqa: E402


def settings_tiledb_py_skips(schema, ctx):
    """tiledb-py drops a capacity of 0 and a SCALE_FLOAT factor of 0 (it passes only truthy
    values on): hand those to TileDB's own setters, so that TileDB answers."""
    lctx = tiledb.libtiledb.Context(ctx)
    if schema.get("capacity") == 0:
        raw = tiledb.libtiledb.ArraySchema(lctx, tiledb.libtiledb.ArrayType.SPARSE if schema["type"] == "sparse" else tiledb.libtiledb.ArrayType.DENSE)
        raw._capacity = 0
    # tiledb-py refuses these dimensions itself (a numpy dtype check, a cast): ask TileDB's
    # Dimension constructor instead.
    for d in schema.get("dims", []):
        dom = d.get("domain", [0, 0])
        if d["type"] == "BOOL":
            tiledb.libtiledb.Dimension(lctx, d["name"], tiledb.libtiledb.DataType.BOOL, np.array(dom, dtype=np.uint8), None)
        if d["type"].startswith("FLOAT") and not all(math.isfinite(float(v)) for v in dom):
            tiledb.libtiledb.Dimension(lctx, d["name"], getattr(tiledb.libtiledb.DataType, d["type"]), np.array([float(v) for v in dom]), None)
    fields = schema.get("dims", []) + schema.get("attrs", [])
    specs = [f for field in fields for f in field.get("filters", [])]
    specs += [f for key in ("coords_filters", "offsets_filters", "validity_filters") for f in schema.get(key, [])]
    for spec in specs:
        if spec.get("name") == "SCALE_FLOAT" and spec.get("factor") == 0:
            raw = tiledb.libtiledb.Filter(lctx, tiledb.libtiledb.FilterType.SCALE_FLOAT)
            raw._set_option(lctx, tiledb.libtiledb.FilterOption.SCALE_FLOAT_FACTOR, 0.0)


def create(uri, schema, case):
    ctx = tdbcase.make_ctx(case)
    settings_tiledb_py_skips(schema, ctx)
    tiledb.Array.create(uri, tdbcase.make_schema(schema, ctx), ctx=ctx)
    return {"ok": True}


def write(uri, schema, step, case):
    ctx = tdbcase.make_ctx(case)
    fields = tdbcase.schema_fields(schema)
    validity = step.get("validity", {})
    no_validity = set(step.get("no_validity", []))
    with tiledb.open(uri, "w", timestamp=step.get("timestamp", 1), ctx=ctx) as A:
        lt_ctx = tiledb.libtiledb.Context(ctx)
        q = tiledb.libtiledb.Query(lt_ctx, A.array, tiledb.libtiledb.QueryType.WRITE)
        layout = step.get("layout", "unordered" if schema["type"] == "sparse" else "row-major")
        q.layout = {
            "unordered": tiledb.libtiledb.LayoutType.UNORDERED,
            "row-major": tiledb.libtiledb.LayoutType.ROW_MAJOR,
            "col-major": tiledb.libtiledb.LayoutType.COL_MAJOR,
            "global": tiledb.libtiledb.LayoutType.GLOBAL_ORDER,
        }[layout]
        keep = []
        if "subarray" in step:
            sub = tiledb.libtiledb.Subarray(lt_ctx, A.array)
            for i, (lo, hi) in enumerate(step["subarray"]):
                t = schema["dims"][i]["type"]
                sub._add_dim_range(i, (tdbcase.dim_value(t, lo), tdbcase.dim_value(t, hi)))
            q.set_subarray(sub)
        columns = {k: tdbcase.expand_values(v) for k, v in step.get("coords", {}).items()}
        columns.update({k: tdbcase.expand_values(v) for k, v in step.get("data", {}).items()})
        for name, values in columns.items():
            t, cvn, nullable = fields[name]
            given = validity.get(name)
            with_validity = (nullable and name not in no_validity) or given is not None
            arr, n, offsets, valid = tdbcase.field_buffers(t, cvn, with_validity, values, given)
            keep.append((arr, offsets, valid))
            q.set_data_buffer(name, arr, n)
            if name in step.get("raw_offsets", {}):
                offsets = np.array(step["raw_offsets"][name], dtype=np.uint64)
                keep.append(offsets)
            if offsets is not None:
                q.set_offsets_buffer(name, offsets, len(offsets))
            if valid is not None:
                q.set_validity_buffer(name, valid, len(valid))
        q._submit()
        q.finalize()
        del q, keep
    return {"ok": True}


def handle(req):
    op = req["op"]
    if op == "create":
        return create(req["uri"], req["schema"], req.get("case", {}))
    if op == "write":
        return write(req["uri"], req["schema"], req["step"], req.get("case", {}))
    if op == "read":
        root, name = os.path.split(req["uri"])
        case = dict(req.get("case", {}))
        case["uri"] = name
        return tdbcase.run_read(root, case, req["read"])
    raise ValueError(f"unknown op {op}")


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = handle(json.loads(line))
        except Exception as e:  # every refusal is an answer; the loop goes on
            answer = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
