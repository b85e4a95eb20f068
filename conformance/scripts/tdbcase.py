"""Shared code of the conformance scripts: loading cases, canonical JSON, replaying recipes.

Everything that talks to TileDB goes through tiledb-py; this module works with both the
current release (tiledb-py 0.36.x, TileDB 2.30) and the old one (tiledb-py 0.19.x, TileDB 2.13).
The canonical JSON is described in conformance/README.md; keep the two in step.
"""

from __future__ import annotations

import glob
import json
import os

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore

import numpy as np
import tiledb

CONFORMANCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES_DIR = os.path.join(CONFORMANCE_DIR, "cases")

# --------------------------------------------------------------------------------------------
# Datatypes
# --------------------------------------------------------------------------------------------

INT_TYPES = {
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
}
FLOAT_TYPES = {"FLOAT32": np.float32, "FLOAT64": np.float64}
DATETIME_UNITS = ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"]
DATETIME_NAMES = ["YEAR", "MONTH", "WEEK", "DAY", "HR", "MIN", "SEC", "MS", "US", "NS", "PS", "FS", "AS"]
DATETIME_TYPES = {f"DATETIME_{n}": u for n, u in zip(DATETIME_NAMES, DATETIME_UNITS)}
TIME_TYPES = {f"TIME_{n}": u for n, u in zip(DATETIME_NAMES[4:], DATETIME_UNITS[4:])}
# Types whose cells are byte strings; a cell is written and dumped as one hex string.
BYTE_TYPES = {"CHAR", "STRING_ASCII", "STRING_UTF8", "BLOB", "GEOM_WKB", "GEOM_WKT"}
# Integer types dumped as decimal strings (JSON numbers are not exact beyond 2^53).
WIDE_INT_TYPES = {"INT64", "UINT64"} | set(DATETIME_TYPES) | set(TIME_TYPES)


def raw_dtype(t: str) -> np.dtype:
    """The numpy dtype of one value of TileDB type `t` as it sits in a buffer."""
    if t in INT_TYPES:
        return np.dtype(INT_TYPES[t])
    if t in FLOAT_TYPES:
        return np.dtype(FLOAT_TYPES[t])
    if t in DATETIME_TYPES or t in TIME_TYPES:
        return np.dtype(np.int64)
    if t == "BOOL":
        return np.dtype(np.uint8)
    if t in BYTE_TYPES:
        return np.dtype(np.uint8)
    raise ValueError(f"unknown datatype {t}")


def py_dtype(t: str, cell_val_num, var: bool):
    """The dtype tiledb-py wants for Attr/Dim construction, and whether `var` must be passed."""
    if t in INT_TYPES or t in FLOAT_TYPES:
        base = np.dtype(INT_TYPES.get(t) or FLOAT_TYPES[t])
    elif t in DATETIME_TYPES:
        base = np.dtype(f"M8[{DATETIME_TYPES[t]}]")
    elif t in TIME_TYPES:
        base = np.dtype(f"m8[{TIME_TYPES[t]}]")
    elif t == "BOOL":
        base = np.dtype(np.bool_)
    elif t == "CHAR":
        return (np.dtype("S") if var else np.dtype(f"S{cell_val_num}")), var
    elif t == "STRING_UTF8":
        if not var:
            raise ValueError("fixed-size STRING_UTF8 is not expressible in tiledb-py")
        return np.dtype("U"), True
    elif t == "STRING_ASCII":
        return "ascii", True
    elif t == "BLOB":
        return "blob", var
    elif t == "GEOM_WKB":
        return "wkb", var
    elif t == "GEOM_WKT":
        return "wkt", var
    else:
        raise ValueError(f"unknown datatype {t}")
    if var:
        return base, True
    if cell_val_num == 1:
        return base, False
    if cell_val_num == 2 and t in FLOAT_TYPES:
        return np.dtype(np.complex64 if t == "FLOAT32" else np.complex128), False
    return np.dtype([("", base)] * cell_val_num), False


def tiledb_type_name(dt) -> str:
    """TileDB's name of a datatype reported by tiledb-py (numpy dtype or string)."""
    if isinstance(dt, str):
        return {"ascii": "STRING_ASCII", "blob": "BLOB", "wkb": "GEOM_WKB", "wkt": "GEOM_WKT"}[dt]
    dt = np.dtype(dt)
    if dt.kind == "V":
        dt = dt[0]
    if dt.kind == "c":
        return "FLOAT32" if dt.itemsize == 8 else "FLOAT64"
    if dt.kind == "S":
        return "CHAR"
    if dt.kind == "U":
        return "STRING_UTF8"
    if dt.kind == "b":
        return "BOOL"
    if dt.kind == "M":
        unit = np.datetime_data(dt)[0]
        return [k for k, u in DATETIME_TYPES.items() if u == unit][0]
    if dt.kind == "m":
        unit = np.datetime_data(dt)[0]
        return [k for k, u in TIME_TYPES.items() if u == unit][0]
    for k, v in {**INT_TYPES, **FLOAT_TYPES}.items():
        if np.dtype(v) == dt:
            return k
    raise ValueError(f"unmapped dtype {dt}")


# --------------------------------------------------------------------------------------------
# Canonical JSON values
# --------------------------------------------------------------------------------------------


def canon_scalar(t: str, raw: bytes):
    """One value of type `t`, given its little-endian bytes, in canonical JSON."""
    dt = raw_dtype(t).newbyteorder("<")
    v = np.frombuffer(raw, dtype=dt, count=1)[0]
    if t in FLOAT_TYPES:
        width = dt.itemsize * 2
        return "0x" + format(int.from_bytes(raw, "little"), f"0{width}x")
    if t in WIDE_INT_TYPES:
        return str(int(v))
    return int(v)


def canon_cell(t: str, raw: bytes, var: bool, cell_val_num):
    """One cell (all its values) in canonical JSON."""
    if t in BYTE_TYPES:
        return raw.hex()
    size = raw_dtype(t).itemsize
    vals = [canon_scalar(t, raw[i : i + size]) for i in range(0, len(raw), size)]
    if not var and cell_val_num == 1:
        return vals[0]
    return vals


def cell_bytes(t: str, value, var: bool, cell_val_num) -> bytes:
    """Bytes of one cell as given in a case file (the inverse of canon_cell for inputs)."""
    if t in BYTE_TYPES:
        if isinstance(value, dict):
            return bytes.fromhex(value["hex"])
        if t in ("BLOB", "GEOM_WKB"):
            return bytes.fromhex(value)
        return value.encode("utf-8")
    vals = value if isinstance(value, list) else [value]
    if not var and len(vals) != cell_val_num:
        raise ValueError(f"cell {value!r} does not have {cell_val_num} values")
    dt = raw_dtype(t).newbyteorder("<")
    out = b""
    for v in vals:
        if t in FLOAT_TYPES and isinstance(v, str):
            if v.startswith("0x"):
                out += int(v, 16).to_bytes(dt.itemsize, "little")
                continue
            v = float(v)
        if t in WIDE_INT_TYPES and isinstance(v, str):
            v = int(v)
        if t == "BOOL":
            v = int(v)
        out += np.array([v], dtype=dt).tobytes()
    return out


# --------------------------------------------------------------------------------------------
# Case loading
# --------------------------------------------------------------------------------------------


def load_cases(pattern: str | None = None):
    cases = []
    for path in sorted(glob.glob(os.path.join(CASES_DIR, "*.toml"))):
        with open(path, "rb") as f:
            case = tomllib.load(f)
        case["_file"] = os.path.relpath(path, CONFORMANCE_DIR)
        expected_id = os.path.basename(path)[: -len(".toml")]
        if case.get("id") != expected_id:
            raise ValueError(f"{path}: id {case.get('id')!r} differs from the file name")
        if pattern and pattern not in case["id"]:
            continue
        cases.append(case)
    return cases


def applies(case, format_version: int) -> bool:
    return case.get("min_format", 1) <= format_version <= case.get("max_format", 10**6)


# --------------------------------------------------------------------------------------------
# Schema construction
# --------------------------------------------------------------------------------------------


def make_filter(spec):
    name = spec["name"]
    level = spec.get("level")
    kw = {} if level is None else {"level": level}
    if name == "GZIP":
        return tiledb.GzipFilter(**kw)
    if name == "ZSTD":
        return tiledb.ZstdFilter(**kw)
    if name == "LZ4":
        return tiledb.LZ4Filter(**kw)
    if name == "BZIP2":
        return tiledb.Bzip2Filter(**kw)
    if name == "RLE":
        return tiledb.RleFilter(**kw)
    if name == "DICTIONARY":
        return tiledb.DictionaryFilter(**kw)
    if name == "DOUBLE_DELTA":
        if "reinterpret_datatype" in spec:
            return tiledb.DoubleDeltaFilter(reinterp_dtype=raw_dtype(spec["reinterpret_datatype"]), **kw)
        return tiledb.DoubleDeltaFilter(**kw)
    if name == "DELTA":
        if "reinterpret_datatype" in spec:
            return tiledb.DeltaFilter(reinterp_dtype=raw_dtype(spec["reinterpret_datatype"]), **kw)
        return tiledb.DeltaFilter(**kw)
    if name == "BIT_WIDTH_REDUCTION":
        return tiledb.BitWidthReductionFilter(window=spec.get("max_window", 256))
    if name == "POSITIVE_DELTA":
        return tiledb.PositiveDeltaFilter(window=spec.get("max_window", 1024))
    if name == "BYTESHUFFLE":
        return tiledb.ByteShuffleFilter()
    if name == "BITSHUFFLE":
        return tiledb.BitShuffleFilter()
    if name == "CHECKSUM_MD5":
        return tiledb.ChecksumMD5Filter()
    if name == "CHECKSUM_SHA256":
        return tiledb.ChecksumSHA256Filter()
    if name == "SCALE_FLOAT":
        return tiledb.FloatScaleFilter(spec["factor"], spec["offset"], spec["bytewidth"])
    if name == "XOR":
        return tiledb.XORFilter()
    if name == "NOOP":
        return tiledb.NoOpFilter()
    if name == "WEBP":
        fmt = getattr(tiledb.libtiledb.WebpInputFormat, "WEBP_" + spec.get("input_format", "RGB"))
        return tiledb.WebpFilter(input_format=fmt, quality=spec.get("quality", 100.0), lossless=spec.get("lossless", True))
    raise ValueError(f"unknown filter {name}")


def make_filters(specs):
    return tiledb.FilterList([make_filter(s) for s in specs or []])


def dim_value(t, v):
    if t in DATETIME_TYPES:
        return np.datetime64(int(v), DATETIME_TYPES[t])
    if t in TIME_TYPES:
        return np.timedelta64(int(v), TIME_TYPES[t])
    if t in FLOAT_TYPES:
        return raw_dtype(t).type(float(v))
    return raw_dtype(t).type(int(v))


def make_dim(d, ctx):
    t = d["type"]
    filters = make_filters(d.get("filters"))
    if t == "STRING_ASCII":
        return tiledb.Dim(name=d["name"], dtype="ascii", filters=filters, ctx=ctx)
    dtype, _ = py_dtype(t, 1, False)
    dom = tuple(dim_value(t, v) for v in d["domain"])
    tile = d.get("tile")
    if tile is not None:
        tile = raw_dtype(t).type(tile) if t not in DATETIME_TYPES and t not in TIME_TYPES else np.int64(tile)
    return tiledb.Dim(name=d["name"], domain=dom, tile=tile, dtype=dtype, filters=filters, ctx=ctx)


def cell_val_num_of(a):
    cvn = a.get("cell_val_num", 1)
    return cvn


def make_attr(a, ctx):
    t = a["type"]
    cvn = cell_val_num_of(a)
    var = cvn == "var"
    dtype, var_flag = py_dtype(t, cvn, var)
    kw = dict(name=a["name"], dtype=dtype, nullable=a.get("nullable", False), filters=make_filters(a.get("filters")), ctx=ctx)
    if var_flag or var:
        kw["var"] = True
    if "enumeration" in a:
        kw["enum_label"] = a["enumeration"]
    if "fill" in a:
        raw = cell_bytes(t, a["fill"], var, cvn)
        kw["fill"] = _fill_value(t, raw, var, cvn)
    attr = tiledb.Attr(**kw)
    return attr


def _fill_value(t, raw, var, cvn):
    """The fill value in the form tiledb-py's Attr(fill=...) takes."""
    if t in BYTE_TYPES:
        return raw
    arr = np.frombuffer(raw, dtype=raw_dtype(t).newbyteorder("<")).astype(raw_dtype(t))
    if t in DATETIME_TYPES:
        arr = arr.view(f"M8[{DATETIME_TYPES[t]}]")
    elif t in TIME_TYPES:
        arr = arr.view(f"m8[{TIME_TYPES[t]}]")
    if not var and cvn == 1:
        return arr[0]
    if not var and cvn == 2 and t in FLOAT_TYPES:
        return arr.view(np.complex64 if t == "FLOAT32" else np.complex128)[0]
    if not var:
        return np.array(tuple(arr.tolist()), dtype=np.dtype([("", arr.dtype)] * cvn))
    return arr


def make_enumeration(e, ctx):
    t = e["type"]
    if t in ("STRING_UTF8", "STRING_ASCII"):
        values = e["values"]
        dtype = np.dtype("U") if t == "STRING_UTF8" else np.dtype("S")
        if t == "STRING_ASCII":
            values = [v.encode() for v in values]
        return tiledb.Enumeration(e["name"], e.get("ordered", False), values=np.array(values, dtype=dtype if t == "STRING_UTF8" else object), ctx=ctx)
    return tiledb.Enumeration(e["name"], e.get("ordered", False), values=np.array(e["values"], dtype=raw_dtype(t)), ctx=ctx)


def make_schema(s, ctx):
    dims = [make_dim(d, ctx) for d in s["dims"]]
    kw = dict(
        domain=tiledb.Domain(*dims, ctx=ctx),
        attrs=[make_attr(a, ctx) for a in s["attrs"]],
        cell_order=s.get("cell_order", "row-major"),
        tile_order=s.get("tile_order", "row-major"),
        sparse=s["type"] == "sparse",
        ctx=ctx,
    )
    if "capacity" in s:
        kw["capacity"] = s["capacity"]
    if "allows_duplicates" in s:
        kw["allows_duplicates"] = s["allows_duplicates"]
    for key in ("coords_filters", "offsets_filters", "validity_filters"):
        if key in s:
            kw[key] = make_filters(s[key])
    if s.get("enumerations"):
        kw["enums"] = [make_enumeration(e, ctx) for e in s["enumerations"]]
    if s.get("dim_labels"):
        kw["dim_labels"] = {
            lab["dim_index"]: {
                lab["name"]: tiledb.DimLabelSchema(
                    order=lab.get("order", "increasing"),
                    label_dtype=py_dtype(lab["type"], 1, False)[0] if lab["type"] != "STRING_ASCII" else "ascii",
                    dim_dtype=raw_dtype(s["dims"][lab["dim_index"]]["type"]),
                    dim_tile=lab.get("tile"),
                    label_filters=make_filters(lab.get("filters")),
                    ctx=ctx,
                )
            }
            for lab in s["dim_labels"]
        }
    schema = tiledb.ArraySchema(**kw)
    if s.get("current_domain"):
        rect = tiledb.NDRectangle(ctx, schema.domain)
        for i, (lo, hi) in enumerate(s["current_domain"]):
            t = s["dims"][i]["type"]
            rect.set_range(i, dim_value(t, lo), dim_value(t, hi))
        current = tiledb.CurrentDomain(ctx)
        current.set_ndrectangle(rect)
        schema.set_current_domain(current)
    return schema


# --------------------------------------------------------------------------------------------
# Writing with raw buffers (exact bytes, explicit validity)
# --------------------------------------------------------------------------------------------


def expand_values(values):
    """A list of cells, or { start, step, count, modulo? } for a long integer sequence:
    value i is (start + i * step) % modulo when modulo is given, else start + i * step."""
    if isinstance(values, dict):
        start, step, count = values["start"], values.get("step", 1), values["count"]
        mod = values.get("modulo")
        return [((start + i * step) % mod) if mod else (start + i * step) for i in range(count)]
    return values


def field_buffers(t, cvn, nullable, values, validity):
    """data, offsets (or None), validity (or None) buffers for one field from case values."""
    var = cvn == "var"
    cells = [cell_bytes(t, v if v is not None else _null_placeholder(t, cvn), var, cvn) for v in values]
    data = b"".join(cells)
    offsets = None
    if var:
        offs, pos = [], 0
        for c in cells:
            offs.append(pos)
            pos += len(c)
        offsets = np.array(offs, dtype=np.uint64)
    valid = None
    if nullable:
        if validity is None:
            validity = [0 if v is None else 1 for v in values]
        valid = np.array(validity, dtype=np.uint8)
    dt = raw_dtype(t)
    arr = np.frombuffer(data, dtype=dt.newbyteorder("<")).astype(dt) if data else np.zeros(0, dtype=dt)
    if len(arr) == 0:
        # TileDB refuses a null pointer; give it one byte-sized placeholder with zero size.
        arr = np.zeros(1, dtype=dt)
        return arr, 0, offsets, valid
    return arr, len(arr), offsets, valid


def _null_placeholder(t, cvn):
    if cvn == "var":
        return "" if t in BYTE_TYPES else []
    if t in BYTE_TYPES:
        return "00" * cvn if t in ("BLOB", "GEOM_WKB") else "\0" * cvn
    return [0] * cvn if cvn != 1 else 0


def schema_fields(schema):
    """Name -> (type, cell_val_num, nullable) for every dimension and attribute of a case schema."""
    out = {}
    for d in schema["dims"]:
        out[d["name"]] = (d["type"], "var" if d["type"] == "STRING_ASCII" else 1, False)
    for a in schema["attrs"]:
        out[a["name"]] = (a["type"], cell_val_num_of(a), a.get("nullable", False))
    for lab in schema.get("dim_labels", []):
        out[lab["name"]] = (lab["type"], "var" if lab["type"] == "STRING_ASCII" else 1, False)
    return out


LEGACY = not hasattr(tiledb.libtiledb, "LayoutType")  # tiledb-py < 0.26: no raw query bindings
OLDEST_LEGACY = tiledb.__version__.startswith("0.19.")
VAR_NUM = 0xFFFFFFFF  # TileDB's TILEDB_VAR_NUM (older tiledb-py does not export it)


class Unsupported(Exception):
    """The producer's tiledb-py cannot express this case faithfully; the case is skipped."""


def write_step(uri, schema, step, ctx):
    if LEGACY:
        return write_step_legacy(uri, schema, step, ctx)
    fields = schema_fields(schema)
    with tiledb.open(uri, "w", timestamp=step["timestamp"], ctx=ctx) as A:
        # The query and subarray keep references to this context object (not copies): it must
        # outlive them, so it is held in a local for the whole write.
        lt_ctx = tiledb.libtiledb.Context(ctx)
        q = tiledb.libtiledb.Query(lt_ctx, A.array, tiledb.libtiledb.QueryType.WRITE)
        layout = step.get("layout", "unordered" if schema["type"] == "sparse" else "row-major")
        q.layout = {
            "unordered": tiledb.libtiledb.LayoutType.UNORDERED,
            "row-major": tiledb.libtiledb.LayoutType.ROW_MAJOR,
            "col-major": tiledb.libtiledb.LayoutType.COL_MAJOR,
            "global": tiledb.libtiledb.LayoutType.GLOBAL_ORDER,
        }[layout]
        keep = []  # buffers must outlive submit
        if "subarray" in step:
            sub = tiledb.libtiledb.Subarray(lt_ctx, A.array)
            for i, (lo, hi) in enumerate(step["subarray"]):
                t = schema["dims"][i]["type"]
                sub._add_dim_range(i, (dim_value(t, lo), dim_value(t, hi)))
            q.set_subarray(sub)
        columns = {k: expand_values(v) for k, v in step.get("coords", {}).items()}
        columns.update({k: expand_values(v) for k, v in step.get("data", {}).items()})
        validity = step.get("validity", {})
        for name, values in columns.items():
            t, cvn, nullable = fields[name]
            arr, n, offsets, valid = field_buffers(t, cvn, nullable, values, validity.get(name))
            keep.append((arr, offsets, valid))
            q.set_data_buffer(name, arr, n)
            if offsets is not None:
                q.set_offsets_buffer(name, offsets, len(offsets))
            if valid is not None:
                q.set_validity_buffer(name, valid, len(valid))
        q._submit()
        q.finalize()
        del q, keep


def legacy_column(t, cvn, values):
    """Case values of one field as the numpy array tiledb-py 0.19 writes (cell bytes exact)."""
    var = cvn == "var"
    cells = [cell_bytes(t, v if v is not None else _null_placeholder(t, cvn), var, cvn) for v in values]
    dt = raw_dtype(t)
    if t in BYTE_TYPES:
        if not var:
            return np.array(cells, dtype=f"S{cvn}")
        if t == "STRING_UTF8":
            return np.array([c.decode("utf-8") for c in cells], dtype=object)
        return np.array(cells, dtype=object)
    if t in DATETIME_TYPES or t in TIME_TYPES:
        unit = DATETIME_TYPES.get(t) or TIME_TYPES[t]
        kind = "M8" if t in DATETIME_TYPES else "m8"
        view = np.dtype(f"{kind}[{unit}]")
    elif t == "BOOL":
        view = np.dtype(np.bool_)
    else:
        view = dt
    arrays = [np.frombuffer(c, dtype=dt.newbyteorder("<")).astype(dt).view(view) for c in cells]
    if var:
        out = np.empty(len(arrays), dtype=object)
        for i, a in enumerate(arrays):
            out[i] = a
        return out
    flat = np.concatenate(arrays) if arrays else np.zeros(0, dtype=view)
    if cvn == 1:
        return flat
    if cvn == 2 and t in FLOAT_TYPES:
        return flat.view(np.complex64 if t == "FLOAT32" else np.complex128)
    return flat.view(np.dtype([("", view)] * cvn))


def write_step_legacy(uri, schema, step, ctx):
    fields = schema_fields(schema)
    layout = step.get("layout", "unordered" if schema["type"] == "sparse" else "row-major")
    validity = step.get("validity", {})
    data = {}
    nullmaps = {}
    for name, values in step.get("data", {}).items():
        values = expand_values(values)
        t, cvn, nullable = fields[name]
        if OLDEST_LEGACY and cvn == "var" and t in BYTE_TYPES and any(len(cell_bytes(t, v, True, cvn)) == 0 for v in values if v is not None):
            # tiledb-py 0.19 sometimes stores stray NUL bytes after another cell when a column
            # has an empty string cell (seen by comparing with the 2.30 corpus); no rule found.
            raise Unsupported("a var-sized byte column with an empty cell through tiledb-py 0.19")
        data[name] = legacy_column(t, cvn, values)
        if nullable:
            v = validity.get(name) or [0 if x is None else 1 for x in values]
            nullmaps[name] = np.array(v, dtype=np.uint8)
    with tiledb.open(uri, "w", timestamp=step["timestamp"], ctx=ctx) as A:
        if schema["type"] == "sparse":
            if layout != "unordered":
                raise Unsupported("tiledb-py 0.19 writes sparse data unordered only")
            coords = [legacy_column(fields[d["name"]][0], fields[d["name"]][1], expand_values(step["coords"][d["name"]])) for d in schema["dims"]]
            sel = coords[0] if len(coords) == 1 else tuple(coords)
            tiledb.libtiledb._setitem_impl_sparse(A, sel, data, nullmaps)
        else:
            shape = [int(hi) - int(lo) + 1 for lo, hi in step["subarray"]]
            order = {"row-major": "C", "col-major": "F"}.get(layout)
            if order is None:
                raise Unsupported(f"dense {layout} writes through tiledb-py 0.19")
            for name in data:
                arr = data[name].reshape(shape, order=order)
                data[name] = np.asfortranarray(arr) if order == "F" else arr
            for name in nullmaps:
                nullmaps[name] = nullmaps[name].reshape(shape, order=order)
            if any(d["type"] not in INT_TYPES and d["type"] not in DATETIME_TYPES for d in schema["dims"]):
                raise Unsupported("non-integer dense subarrays through tiledb-py 0.19")
            if any(int(lo) < 0 and d["type"] in INT_TYPES for d, (lo, _) in zip(schema["dims"], step["subarray"])):
                # tiledb-py 0.19 takes negative slice bounds as counted from the end.
                raise Unsupported("negative dense subarray bounds through tiledb-py 0.19")
            # Integer slices stop before their end; datetime slices include it.
            sel = tuple(
                slice(dim_value(d["type"], lo), dim_value(d["type"], int(hi) + (1 if d["type"] in INT_TYPES else 0)))
                for d, (lo, hi) in zip(schema["dims"], step["subarray"])
            )
            A._setitem_impl(sel, data, nullmaps)


# --------------------------------------------------------------------------------------------
# Replaying a recipe
# --------------------------------------------------------------------------------------------


def make_ctx(case, extra=None):
    cfg = {}
    if "encryption" in case:
        cfg["sm.encryption_type"] = case["encryption"]["type"]
        cfg["sm.encryption_key"] = case["encryption"]["key"]
    cfg.update(extra or {})
    # One context per configuration for the whole process: creating and dropping a TileDB
    # context for every read was seen to corrupt the heap now and then under load.
    key = json.dumps(cfg, sort_keys=True)
    if key not in _CONTEXTS:
        _CONTEXTS[key] = tiledb.Ctx(tiledb.Config(cfg)) if cfg else tiledb.Ctx()
    return _CONTEXTS[key]


_CONTEXTS = {}


# Strings of wider code units: a metadata value of these is a list of code units.
WIDE_STRING_TYPES = {"STRING_UTF16": "<u2", "STRING_UCS2": "<u2", "STRING_UTF32": "<u4", "STRING_UCS4": "<u4"}


def meta_buffer(t, values):
    """The bytes of a metadata value: a string (hex for BLOB) for byte types, else a list."""
    if t in BYTE_TYPES:
        return cell_bytes(t, values, True, "var")
    if t in WIDE_STRING_TYPES:
        return np.array(values, dtype=WIDE_STRING_TYPES[t]).tobytes()
    return b"".join(cell_bytes(t, v, False, 1) for v in values)


_LIBTILEDB = None


def _libtiledb():
    """TileDB's C library, the one tiledb-py loaded, for what tiledb-py cannot decode."""
    global _LIBTILEDB
    if _LIBTILEDB is None:
        import ctypes

        libs = glob.glob(os.path.join(os.path.dirname(tiledb.__file__), "..", "tiledb.libs", "libtiledb*.so*"))
        lib = ctypes.CDLL(libs[0] if libs else "libtiledb.so")
        lib.tiledb_datatype_size.restype = ctypes.c_uint64
        _LIBTILEDB = lib
    return _LIBTILEDB


def raw_metadata(uri, key, is_group):
    """`(type name, raw bytes)` of one metadata value through TileDB's C API: tiledb-py cannot
    decode every type (wide strings, WKT, dates without numpy's unit)."""
    import ctypes

    lib = _libtiledb()
    ctx, obj = ctypes.c_void_p(), ctypes.c_void_p()
    if lib.tiledb_ctx_alloc(None, ctypes.byref(ctx)) != 0:
        raise RuntimeError("tiledb_ctx_alloc failed")
    kind = "group" if is_group else "array"
    try:
        if getattr(lib, f"tiledb_{kind}_alloc")(ctx, uri.encode(), ctypes.byref(obj)) != 0:
            raise RuntimeError(f"tiledb_{kind}_alloc failed")
        if getattr(lib, f"tiledb_{kind}_open")(ctx, obj, 0) != 0:  # TILEDB_READ
            raise RuntimeError(f"tiledb_{kind}_open failed")
        t, n, v = ctypes.c_int(), ctypes.c_uint32(), ctypes.c_void_p()
        rc = getattr(lib, f"tiledb_{kind}_get_metadata")(ctx, obj, key.encode(), ctypes.byref(t), ctypes.byref(n), ctypes.byref(v))
        if rc != 0:
            raise RuntimeError(f"tiledb_{kind}_get_metadata failed")
        size = n.value * lib.tiledb_datatype_size(t.value)
        raw = ctypes.string_at(v, size) if size else b""
        getattr(lib, f"tiledb_{kind}_close")(ctx, obj)
        name = tiledb.libtiledb.DataType(t.value).name
        return name, raw
    finally:
        if obj:
            getattr(lib, f"tiledb_{kind}_free")(ctypes.byref(obj))
        lib.tiledb_ctx_free(ctypes.byref(ctx))


def put_metadata(A, step):
    if LEGACY:
        # tiledb-py 0.19 stores numpy metadata under a prefixed key and cannot choose the type
        # of scalars, so it cannot replay a typed metadata put exactly.
        raise Unsupported("typed metadata through tiledb-py 0.19")
    t = step["type"]
    data = meta_buffer(t, step["values"])
    size = np.dtype(WIDE_STRING_TYPES[t]).itemsize if t in WIDE_STRING_TYPES else raw_dtype(t).itemsize
    count = len(data) // size
    target = A.array if hasattr(A, "array") else A
    target._put_metadata(step["key"], getattr(tiledb.libtiledb.DataType, t), count, data)


def replay(case, out_dir):
    """Create the case's arrays/groups under out_dir and apply every step."""
    ctx = make_ctx(case)
    main = os.path.join(out_dir, case.get("uri", "array"))
    # The schema each array was created with (as the case spells it), by path: writes need it.
    schemas = {}
    if case.get("schema") is not None:
        tiledb.Array.create(main, make_schema(case["schema"], ctx), ctx=ctx)
        schemas[main] = json.loads(json.dumps(case["schema"]))
    for step in case.get("steps", []):
        op = step["op"]
        target = os.path.join(out_dir, step["uri"]) if "uri" in step else main
        if op == "write":
            write_step(target, schemas[target], step, ctx)
        elif op == "delete":
            with tiledb.open(target, "d", timestamp=step["timestamp"], ctx=ctx) as A:
                A.query(cond=step["condition"]).submit()
        elif op == "meta_put":
            with tiledb.open(target, "w", timestamp=step["timestamp"], ctx=ctx) as A:
                put_metadata(A, step)
        elif op == "meta_delete":
            with tiledb.open(target, "w", timestamp=step["timestamp"], ctx=ctx) as A:
                del A.meta[step["key"]]
        elif op == "evolve":
            schema = schemas[target]
            se = tiledb.ArraySchemaEvolution(ctx)
            for e in step.get("add_enumerations", []):
                se.add_enumeration(make_enumeration(e, ctx))
            if step.get("extend_enumerations"):
                with tiledb.open(target, ctx=ctx) as A:
                    for e in step["extend_enumerations"]:
                        old = A.enum(e["name"])
                        values = e["values"]
                        if np.dtype(old.dtype).kind not in "US":
                            values = np.array(values, dtype=old.dtype)
                        se.extend_enumeration(old.extend(values))
            for a in step.get("add_attrs", []):
                se.add_attribute(make_attr(a, ctx))
                schema["attrs"].append(a)
            for name in step.get("drop_attrs", []):
                se.drop_attribute(name)
                schema["attrs"] = [a for a in schema["attrs"] if a["name"] != name]
            for name in step.get("drop_enumerations", []):
                se.drop_enumeration(name)
            if step.get("current_domain"):
                with tiledb.open(target, ctx=ctx) as A:
                    rect = tiledb.NDRectangle(ctx, A.schema.domain)
                for i, (lo, hi) in enumerate(step["current_domain"]):
                    t = schema["dims"][i]["type"]
                    rect.set_range(i, dim_value(t, lo), dim_value(t, hi))
                current = tiledb.CurrentDomain(ctx)
                current.set_ndrectangle(rect)
                se.expand_current_domain(current)
            se.array_evolve(target)
        elif op == "consolidate":
            cfg = {"sm.consolidation.mode": step.get("mode", "fragments")}
            cfg.update(step.get("config", {}))
            kw = {}
            if "timestamp_range" in step:
                kw["timestamp"] = tuple(step["timestamp_range"])
            tiledb.consolidate(target, config=tiledb.Config(cfg), ctx=ctx, **kw)
        elif op == "vacuum":
            cfg = tiledb.Config({"sm.vacuum.mode": step.get("mode", "fragments")})
            tiledb.vacuum(target, config=cfg, ctx=ctx)
        elif op == "create_array":
            schema = step.get("schema") or case["member_schema"]
            tiledb.Array.create(target, make_schema(schema, ctx), ctx=ctx)
            schemas[target] = json.loads(json.dumps(schema))
        elif op == "create_group":
            tiledb.Group.create(target, ctx=ctx)
        elif op == "group_add":
            relative = step.get("relative", True)
            # An absolute member is the member's path under the group, as a local path.
            member = step["member"] if relative else os.path.abspath(os.path.join(target, step["member"]))
            with tiledb.Group(target, "w", ctx=ctx) as g:
                g.add(member, name=step.get("name"), relative=relative)
        elif op == "group_remove":
            with tiledb.Group(target, "w", ctx=ctx) as g:
                g.remove(step["member"])
        elif op == "group_meta_put":
            with tiledb.Group(target, "w", ctx=ctx) as g:
                put_metadata(g, step)
        elif op == "group_meta_delete":
            with tiledb.Group(target, "w", ctx=ctx) as g:
                del g.meta[step["key"]]
        else:
            raise ValueError(f"{case['id']}: unknown op {op}")


# --------------------------------------------------------------------------------------------
# Reading with TileDB (the oracle) into canonical JSON
# --------------------------------------------------------------------------------------------


def open_array(uri, read, ctx):
    kw = {}
    if "timestamp" in read:
        kw["timestamp"] = read["timestamp"]
    if "timestamp_range" in read:
        kw["timestamp"] = tuple(read["timestamp_range"])
    return tiledb.open(uri, "r", ctx=ctx, **kw)


def actual_fields(A):
    """(name, kind, type, cell_val_num, nullable) of every field of the opened schema."""
    out = []
    sch = A.schema
    for d in sch.domain:
        t = "STRING_ASCII" if d.dtype == np.dtype("S") else tiledb_type_name(d.dtype)
        out.append((d.name, "dim", t, "var" if d.isvar else 1, False))
    for a in sch:
        cvn = "var" if a.isvar else a.ncells
        out.append((a.name, "attr", _attr_type_name(a), cvn, a.isnullable))
    return out


def _attr_type_name(a):
    if hasattr(a, "_tiledb_dtype"):
        return str(a._tiledb_dtype).split(".")[-1]
    # tiledb-py 0.19: numpy dtypes, with BLOB and STRING_ASCII spelt out.
    return tiledb_type_name(a.dtype)


def to_cells(t, cvn, values):
    """Values tiledb-py hands back as Python/numpy objects (enumeration values) as per-cell
    bytes. Cell reads do not come through here: they use TileDB's raw buffers."""
    var = cvn == "var"
    out = []
    if not var and t in BYTE_TYPES:
        raw = np.ascontiguousarray(values).tobytes()
        size = cvn
        return [raw[i : i + size] for i in range(0, len(raw), size)]
    for v in values:
        if isinstance(v, memoryview):
            out.append(bytes(v))
        elif isinstance(v, bytes):
            out.append(v)
        elif isinstance(v, str):
            out.append(v.encode("utf-8"))
        elif isinstance(v, np.ndarray):
            out.append(np.ascontiguousarray(v).astype(raw_dtype(t).newbyteorder("<"), copy=False).tobytes() if v.dtype.kind not in "Mm" else v.view(np.int64).astype("<i8").tobytes())
        else:
            arr = np.array(v)
            if arr.dtype.kind in "Mm":
                arr = arr.view(np.int64)
            if arr.dtype.kind == "c":
                arr = arr.view(np.float32 if arr.dtype.itemsize == 8 else np.float64)
            if arr.dtype.kind == "V":
                arr = np.frombuffer(arr.tobytes(), dtype=raw_dtype(t))
            out.append(arr.astype(raw_dtype(t).newbyteorder("<")).tobytes())
    return out


LAYOUTS = {
    "row-major": "ROW_MAJOR",
    "col-major": "COL_MAJOR",
    "global": "GLOBAL_ORDER",
    "unordered": "UNORDERED",
}


def read_cells(uri, read, ctx):
    """Run one read with TileDB; return the canonical result object.

    The read goes through tiledb-py's PyQuery, which hands back TileDB's raw result buffers
    (data, byte offsets, validity) so that nothing is lost to numpy conversions.
    """
    from tiledb.main import PyQuery

    with open_array(uri, read, ctx) as A:
        fields = actual_fields(A)
        dims = [f for f in fields if f[1] == "dim"]
        by_name = {f[0]: f for f in fields}
        attr_names = list(read.get("attrs", [f[0] for f in fields if f[1] == "attr"]))
        layout = read.get("layout", "row-major")
        sparse = A.schema.sparse
        ranges = read.get("ranges")
        if ranges is None:
            if sparse:
                ned = A.nonempty_domain()
                ranges = [[list(r)] for r in ned] if ned is not None else None
            else:
                ranges = [[[d.domain[0], d.domain[1]]] for d in A.schema.domain]
        names = [d[0] for d in dims] + attr_names
        columns = {name: [] for name in names}
        # Older tiledb-py reads the non-empty domain of a string dimension as None: a whole
        # sparse read there keeps the Subarray's default ranges (the whole domain) instead.
        whole_by_default = LEGACY and sparse and read.get("ranges") is None and hasattr(tiledb, "Subarray")
        if ranges is not None:
            per_dim = None if whole_by_default else [[tuple(_range_value(t, x) for x in r) for r in rs] for (_, _, t, _, _), rs in zip(dims, ranges)]
            if LEGACY:
                # tiledb-py 0.19-0.25: no raw query bindings; PyQuery takes ranges directly
                # (0.19, 0.20) or a Subarray (0.21 and later).
                if "condition" in read and not hasattr(tiledb, "Subarray"):
                    raise Unsupported("read conditions through tiledb-py 0.19")
                q = PyQuery(A._ctx_(), A, tuple(attr_names), tuple(d[0] for d in dims), "CFGU".index("CFGU"[list(LAYOUTS).index(layout)]), False)
                if "condition" in read:
                    q.set_cond(tiledb.QueryCondition(read["condition"]))
                if hasattr(tiledb, "Subarray"):
                    sub = tiledb.Subarray(A)
                    if per_dim is not None:
                        sub.add_ranges(per_dim)
                    q.set_subarray(sub)
                else:
                    q.set_ranges(per_dim)
            else:
                q = PyQuery(A.ctx, A, tuple(attr_names), tuple(d[0] for d in dims), getattr(tiledb.libtiledb.LayoutType, LAYOUTS[layout]), False)
                if "condition" in read:
                    q.set_cond(tiledb.QueryCondition(read["condition"]))
                sub = tiledb.Subarray(A)
                sub.add_ranges(per_dim)
                q.set_subarray(sub)
            q.submit()
            results = q.results()
            for name in names:
                t, cvn, nullable = _field_type(A, by_name, name)
                if len(results[name]) < 3:
                    # tiledb-py 0.19's PyQuery returns no validity buffers.
                    if nullable:
                        raise Unsupported(f"nullable reads through tiledb-py {tiledb.__version__} lose validity (PyQuery returns no validity buffers)")
                    data, offsets = results[name][:2]
                    validity = None
                else:
                    data, offsets, validity = results[name]
                columns[name] = decode_column(t, cvn, bytes(np.asarray(data).tobytes()), offsets, validity if nullable else None)
        counts = {len(c) for c in columns.values()}
        if len(counts) > 1:
            raise ValueError(f"result columns differ in length: { {k: len(v) for k, v in columns.items()} }")
        rows = [list(r) for r in zip(*(columns[n] for n in names))]
        return {
            "fields": [_field_entry(A, by_name, n) for n in names],
            "ordered": layout != "unordered",
            "cells": rows,
        }


def _field_type(A, by_name, name):
    if name in by_name:
        _, _, t, cvn, nullable = by_name[name]
        return t, cvn, nullable
    lab = A.schema.dim_label(name)
    t = "STRING_ASCII" if lab.isvar else tiledb_type_name(lab.dtype)
    return t, "var" if lab.isvar else 1, False


def _field_entry(A, by_name, name):
    if name in by_name:
        n, kind, t, cvn, nullable = by_name[name]
        return {"name": n, "kind": kind, "type": t, "cell_val_num": cvn, "nullable": nullable}
    t, cvn, nullable = _field_type(A, by_name, name)
    return {"name": name, "kind": "label", "type": t, "cell_val_num": cvn, "nullable": nullable}


def decode_column(t, cvn, data, offsets, validity):
    """Raw result buffers of one field -> list of canonical cells (None for nulls)."""
    cells = []
    if cvn == "var":
        offs = [int(o) for o in offsets]
        for i, start in enumerate(offs):
            stop = offs[i + 1] if i + 1 < len(offs) else len(data)
            cells.append(data[start:stop])
    else:
        size = raw_dtype(t).itemsize * cvn
        cells = [data[i : i + size] for i in range(0, len(data), size)]
    out = [canon_cell(t, c, cvn == "var", cvn) for c in cells]
    if validity is not None and len(validity) > 0:
        out = [None if not v else e for e, v in zip(out, validity)]
    return out


def _enum_codes(A, name, labels, t):
    """tiledb-py replaces enumerated codes by their labels; labels are unique, so map back."""
    values = list(A.enum(A.schema.attr(name).enum_label).values())
    index = {}
    for i, v in enumerate(values):
        index.setdefault(v.item() if hasattr(v, "item") else v, i)
    codes = [index[v.item() if hasattr(v, "item") else v] for v in labels]
    return np.array(codes, dtype=raw_dtype(t))


def _range_value(t, x):
    if t == "STRING_ASCII":
        if x is None:
            raise Unsupported("the non-empty domain of a string dimension reads as None")
        return x if isinstance(x, str) else x.decode()
    return dim_value(t, x) if not isinstance(x, (np.generic,)) else x


def read_metadata(uri, read, ctx):
    with open_array(uri, read, ctx) as A:
        out = {}
        n = A.array._metadata_num()
        for i in range(n):
            key = A.array._get_key_from_index(i)
            out[key] = _meta_entry(A.array, key, uri)
        return {"metadata": dict(sorted(out.items()))}


def _meta_entry(arr, key, uri=None, is_group=False):
    try:
        value, dtype = arr._get_metadata(key, False)
    except Exception:
        if uri is None:
            raise
        # A type tiledb-py cannot decode: its raw bytes from the C API.
        t, raw = raw_metadata(uri, key, is_group)
        if t in BYTE_TYPES or t in WIDE_STRING_TYPES:
            return {"type": t, "value": raw.hex()}
        size = raw_dtype(t).itemsize
        return {"type": t, "values": [canon_scalar(t, raw[i : i + size]) for i in range(0, len(raw), size)]}
    return canon_meta(str(dtype).split(".")[-1], value)


def canon_meta(t, value):
    """A metadata value as tiledb-py returns it (str, bytes, number or tuple) in canonical JSON."""
    if t in BYTE_TYPES:
        raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        return {"type": t, "value": raw.hex()}
    values = value if isinstance(value, (tuple, list)) else [value]
    out = []
    for v in values:
        raw = np.array([v]).astype(raw_dtype(t).newbyteorder("<")).tobytes()
        out.append(canon_scalar(t, raw))
    return {"type": t, "values": out}


def _current_domain(A):
    """The current domain as [[lo, hi], ...] per dimension in canonical values, or None."""
    s = A.schema
    if not hasattr(s, "current_domain"):
        return None
    cd = s.current_domain
    if cd.is_empty:
        return None
    rect = cd.ndrectangle
    out = []
    for i, (_, _, t, _, _) in enumerate(f for f in actual_fields(A) if f[1] == "dim"):
        lo, hi = rect.range(i)
        out.append([decode_column(t, 1, _scalar_bytes(t, v), None, None)[0] for v in (lo, hi)])
    return out


def _scalar_bytes(t, v):
    if t in BYTE_TYPES:
        return v.encode() if isinstance(v, str) else bytes(v)
    arr = np.array([v])
    if arr.dtype.kind in "Mm":
        arr = arr.view(np.int64)
    return arr.astype(raw_dtype(t).newbyteorder("<")).tobytes()


def read_schema(uri, read, ctx):
    with open_array(uri, read, ctx) as A:
        s = A.schema
        extra = {}
        current = _current_domain(A)
        if current is not None:
            extra["current_domain"] = current
        return {
            "schema": {
                "array_type": "sparse" if s.sparse else "dense",
                "cell_order": s.cell_order,
                "tile_order": s.tile_order,
                "capacity": int(s.capacity),
                "allows_duplicates": bool(s.allows_duplicates) if s.sparse else False,  # dense: tiledb-py raises
                "dims": [
                    {"name": f[0], "type": f[2], "cell_val_num": f[3]}
                    for f in actual_fields(A)
                    if f[1] == "dim"
                ],
                "attrs": [
                    {"name": f[0], "type": f[2], "cell_val_num": f[3], "nullable": f[4]}
                    for f in actual_fields(A)
                    if f[1] == "attr"
                ],
                **extra,
            }
        }


def read_group(uri, read, ctx):
    with tiledb.Group(uri, "r", ctx=ctx) as g:
        members = []
        for m in g:
            members.append({"name": m.name, "uri": os.path.relpath(m.uri.replace("file://", ""), uri.replace("file://", "")), "type": "array" if m.type == tiledb.Array else "group"})
        meta = {}
        for k in g.meta.keys():
            meta[k] = _meta_entry(g, k, uri, True)
        return {"members": sorted(members, key=lambda m: (m["name"] or "", m["uri"])), "metadata": dict(sorted(meta.items()))}


def read_label(uri, read, ctx):
    """Cells selected by a range on a dimension label (inclusive), with the label's values."""
    name = read["label"]
    with open_array(uri, read, ctx) as A:
        lab = A.schema.dim_label(name)
        lt_ = tiledb_type_name(lab.dtype)
        lo, hi = (_range_value(lt_, x) for x in read["label_range"])
        # The label range goes at its dimension's position; the other dimensions stay whole.
        key = [slice(None)] * A.schema.domain.ndim
        key[lab.dim_index] = slice(lo, hi)
        result = A.label_index([name])[tuple(key)]
        fields = [(name, "label", lt_, 1, False)] + [f for f in actual_fields(A) if f[1] == "attr"]
        # On an N-D array TileDB returns the label values once per index (1-D) but each
        # attribute as the whole slab (N-D): spread the label along its dimension so each cell
        # carries its own label, as the slab is flattened in row-major order.
        shape = next((np.asarray(result[f[0]]).shape for f in fields[1:]), None)
        columns = []
        for n, _, t, cvn, _ in fields:
            arr = np.asarray(result[n])
            if n == name and shape is not None and len(shape) > 1:
                axis = [1] * len(shape)
                axis[lab.dim_index] = -1
                arr = np.broadcast_to(arr.reshape(axis), shape)
            if arr.dtype.kind in "Mm":
                arr = arr.view(np.int64)
            raw = arr.astype(raw_dtype(t).newbyteorder("<")).tobytes()
            columns.append(decode_column(t, cvn, raw, None, None))
        return {
            "fields": [{"name": n, "kind": k, "type": t, "cell_val_num": c, "nullable": nl} for n, k, t, c, nl in fields],
            "ordered": True,
            "cells": [list(r) for r in zip(*columns)],
        }


def read_enumerations(uri, read, ctx):
    out = {}
    with open_array(uri, read, ctx) as A:
        for a in A.schema:
            label = a.enum_label
            if label is None or label in out:
                continue
            e = A.enum(label)
            t = _enum_type(e)
            cvn = "var" if e.cell_val_num == VAR_NUM else e.cell_val_num
            cells = to_cells(t, cvn, e.values())
            out[label] = {
                "type": t,
                "cell_val_num": cvn,
                "ordered": bool(e.ordered),
                "values": [canon_cell(t, c, cvn == "var", cvn) for c in cells],
            }
    return {"enumerations": dict(sorted(out.items()))}


def _enum_type(e):
    dt = e.dtype
    if isinstance(dt, np.dtype) and dt.kind == "U":
        return "STRING_UTF8"
    if isinstance(dt, np.dtype) and dt.kind == "S":
        return "STRING_ASCII" if e.cell_val_num == VAR_NUM else "CHAR"
    return tiledb_type_name(dt)


def run_read(array_root, case, read):
    """One read of a case (any kind) -> canonical JSON object, or {"error": message}."""
    ctx = make_ctx(case, read.get("config"))
    uri = os.path.join(array_root, read.get("uri", case.get("uri", "array")))
    kind = read.get("kind", "cells")
    if kind == "cells":
        return read_cells(uri, read, ctx)
    if kind == "metadata":
        return read_metadata(uri, read, ctx)
    if kind == "schema":
        return read_schema(uri, read, ctx)
    if kind == "group":
        return read_group(uri, read, ctx)
    if kind == "label":
        return read_label(uri, read, ctx)
    if kind == "enumerations":
        return read_enumerations(uri, read, ctx)
    raise ValueError(f"unknown read kind {kind}")


def _is_flat(v):
    return not isinstance(v, (list, dict)) or (isinstance(v, list) and all(not isinstance(x, (list, dict)) for x in v))


def dumps(obj, indent=0) -> str:
    """JSON with one line per cell row: small enough to review, still plain JSON."""
    return _dump(obj, 0) + "\n"


def _dump(v, level):
    pad = " " * (level + 1)
    if isinstance(v, dict):
        if all(not isinstance(x, (list, dict)) for x in v.values()):
            return json.dumps(v, ensure_ascii=True)
        items = [f"{pad}{json.dumps(k)}: {_dump(x, level + 1)}" for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * level + "}"
    if isinstance(v, list):
        if all(_is_flat(x) for x in v) and (not v or not isinstance(v[0], list) or True):
            if all(not isinstance(x, (list, dict)) for x in v):
                return json.dumps(v, ensure_ascii=True)
            return "[\n" + ",\n".join(pad + json.dumps(x, ensure_ascii=True) for x in v) + "\n" + " " * level + "]"
        return "[\n" + ",\n".join(pad + _dump(x, level + 1) for x in v) + "\n" + " " * level + "]"
    return json.dumps(v, ensure_ascii=True)
