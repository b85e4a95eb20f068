#!/usr/bin/env python3
"""Filter test vectors written by real TileDB.

Pinned: tiledb==0.36.1 (TileDB 2.30.0, format version 22). Run with the
venv that has it:

    /work/.venv-tiledb/bin/python conformance/scripts/filter_vectors.py

For every case it creates a small dense array whose attribute has the
case's filter pipeline, writes values, and copies out of the fragment:

  <case>.tile       the attribute's data file: exactly one filtered tile
                    (for var-sized attributes, the var-data tile)
  <case>.offsets    var-sized attributes only: the stored offsets tile
  <case>.validity   nullable attributes only: the stored validity tile
  <case>.values.gz  the unfiltered tile bytes TileDB reads back
                    (values as stored, cell by cell), gzip-compressed;
                    for cases marked tiledb_cannot_read, the values written
  <case>.cells.gz   var-sized attributes only: the start offset of every
                    cell TileDB reads back, u64 little-endian, gzipped

into runtime/tests/data/filters/, with manifest.json describing each case:
datatype, cell size, cell count, the pipelines (taken from the schema
TileDB reports back), the format version, and the SHA-256 of the values.

With `--check-ours DIR` it instead rebuilds each case for which DIR holds
a tile we wrote (`FILTER_VECTORS_OURS=DIR cargo test -p tiledb-runtime
--test filter_tiledb_vectors`), swaps our tile into the fresh fragment (same
size, so the fragment metadata still fits) and checks that TileDB reads
back the same values. Used for the AES case, whose bytes differ by IV.
"""

import gzip
import hashlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import tiledb

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "runtime", "tests", "data", "filters")
KEY = "0123456789abcdeF0123456789abcdeF"  # 32 bytes, for the AES case

rng = np.random.default_rng(20260521)


def filter_json(f):
    """The filter as our manifest spells it (names as in TileDB's FilterType)."""
    name = type(f).__name__
    plain = {
        "NoOpFilter": "NONE",
        "BitShuffleFilter": "BITSHUFFLE",
        "ByteShuffleFilter": "BYTESHUFFLE",
        "ChecksumMD5Filter": "CHECKSUM_MD5",
        "ChecksumSHA256Filter": "CHECKSUM_SHA256",
        "XORFilter": "XOR",
    }
    if name in plain:
        return {"type": plain[name]}
    levelled = {
        "GzipFilter": "GZIP",
        "ZstdFilter": "ZSTD",
        "LZ4Filter": "LZ4",
        "RleFilter": "RLE",
        "Bzip2Filter": "BZIP2",
        "DictionaryFilter": "DICTIONARY",
    }
    if name in levelled:
        return {"type": levelled[name], "level": int(f.level)}
    if name in ("DoubleDeltaFilter", "DeltaFilter"):
        out = {"type": "DOUBLE_DELTA" if name == "DoubleDeltaFilter" else "DELTA", "level": int(f.level)}
        r = f.reinterp_dtype
        if r is not None:
            out["reinterpret"] = np.dtype(r).name
        return out
    if name == "BitWidthReductionFilter":
        return {"type": "BIT_WIDTH_REDUCTION", "max_window": int(f.window)}
    if name == "PositiveDeltaFilter":
        return {"type": "POSITIVE_DELTA", "max_window": int(f.window)}
    if name == "FloatScaleFilter":
        return {"type": "SCALE_FLOAT", "scale": float(f.factor), "offset": float(f.offset), "byte_width": int(f.bytewidth)}
    if name == "WebpFilter":
        return {
            "type": "WEBP",
            "quality": float(f.quality),
            "format": int(f.input_format),
            "lossless": bool(f.lossless),
        }
    raise ValueError(f"unknown filter {name}")


DATATYPE_NAMES = {
    "int8": "INT8", "uint8": "UINT8", "int16": "INT16", "uint16": "UINT16",
    "int32": "INT32", "uint32": "UINT32", "int64": "INT64", "uint64": "UINT64",
    "float32": "FLOAT32", "float64": "FLOAT64", "datetime64[D]": "DATETIME_DAY",
    "datetime64[ms]": "DATETIME_MS", "bool": "BOOL",
}


def ints(dtype, n, lo=None, hi=None):
    info = np.iinfo(dtype)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return rng.integers(lo, hi, size=n, dtype=dtype, endpoint=True)


def smooth(dtype, n):
    """Slowly varying values with runs: what deltas and RLE are for."""
    base = np.cumsum(rng.integers(0, 4, size=n)) // 3
    return (base + 7).astype(dtype)


CASES = []


def case(name, values, filters, **kw):
    CASES.append(dict(name=name, values=values, filters=filters, **kw))


def build_cases():
    F = tiledb
    n = 700
    # Compressors on several types and levels.
    for dt in ["int32", "float64", "uint8", "int64"]:
        v = smooth(dt, n) if dt != "float64" else (smooth("int64", n) * 0.25)
        case(f"gzip_default_{dt}", v, [F.GzipFilter()])
        case(f"gzip_9_{dt}", v, [F.GzipFilter(level=9)])
        case(f"zstd_default_{dt}", v, [F.ZstdFilter()])
        case(f"zstd_19_{dt}", v, [F.ZstdFilter(level=19)])
        case(f"lz4_{dt}", v, [F.LZ4Filter()])
        case(f"bzip2_default_{dt}", v, [F.Bzip2Filter()])
        case(f"rle_{dt}", v, [F.RleFilter()])
        case(f"none_{dt}", v, [F.NoOpFilter()])
    case("gzip_1_random_uint16", ints("uint16", n), [F.GzipFilter(level=1)])
    case("zstd_neg5_random_int32", ints("int32", n), [F.ZstdFilter(level=-5)])
    case("bzip2_9_random_uint8", ints("uint8", n), [F.Bzip2Filter(level=9)])
    case("rle_int16_cvn3", smooth("int16", 3 * 200), [F.RleFilter()], cell_val_num=3)
    # Deltas on every integer type, and on floats through reinterpretation.
    for dt in ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]:
        case(f"double_delta_{dt}", smooth(dt, n), [F.DoubleDeltaFilter()])
        case(f"delta_{dt}", smooth(dt, n), [F.DeltaFilter()])
    case("double_delta_random_int16", ints("int16", n), [F.DoubleDeltaFilter()])
    case("double_delta_random_int32", ints("int32", n, -1000000, 1000000), [F.DoubleDeltaFilter()])
    case("delta_random_int64", ints("int64", n), [F.DeltaFilter()])
    case("double_delta_datetime_day", smooth("int64", n).astype("datetime64[D]"), [F.DoubleDeltaFilter()])
    case("double_delta_float64_as_int64", smooth("int64", n).astype("float64"),
         [F.DoubleDeltaFilter(reinterp_dtype=np.int64)])
    case("delta_float32_as_int32", smooth("int32", n).astype("float32"), [F.DeltaFilter(reinterp_dtype=np.int32)])
    case("delta_int32_as_uint8", smooth("int32", n), [F.DeltaFilter(reinterp_dtype=np.uint8)])
    # Bit width reduction and positive delta.
    for dt in ["int16", "uint16", "int32", "uint32", "int64", "uint64", "int8"]:
        case(f"bwr_{dt}", smooth(dt, n), [F.BitWidthReductionFilter()])
        case(f"positive_delta_{dt}", np.sort(smooth(dt, n)), [F.PositiveDeltaFilter()])
    case("bwr_random_int32_window_64", ints("int32", n, -300, 300), [F.BitWidthReductionFilter(window=64)])
    case("bwr_wide_uint64", ints("uint64", n), [F.BitWidthReductionFilter(window=100)])
    case("bwr_datetime_ms", smooth("int64", n).astype("datetime64[ms]"), [F.BitWidthReductionFilter()])
    case("positive_delta_window_50_uint32", np.sort(ints("uint32", n, 0, 100000)), [F.PositiveDeltaFilter(window=50)])
    case("positive_delta_datetime_day", np.sort(smooth("int64", n)).astype("datetime64[D]"), [F.PositiveDeltaFilter()])
    # Shuffles, XOR, checksums.
    for dt in ["int8", "int16", "int32", "float64"]:
        v = ints(dt, 1005) if dt != "float64" else rng.normal(size=1005)
        case(f"bitshuffle_{dt}_1005", v, [F.BitShuffleFilter()])
        case(f"byteshuffle_{dt}_1005", v, [F.ByteShuffleFilter()])
        case(f"xor_{dt}", v, [F.XORFilter()])
    # 2058 int32 values: a full 8192-byte block and a block of 10 values.
    case("bitshuffle_int32_2058", ints("int32", 2058, 0, 1000), [F.BitShuffleFilter()])
    case("bitshuffle_int64_1030", ints("int64", 1030, 0, 1000), [F.BitShuffleFilter()])
    case("xor_float32", rng.normal(size=n).astype("float32"), [F.XORFilter()])
    case("checksum_md5_int32", ints("int32", n), [F.ChecksumMD5Filter()])
    case("checksum_sha256_float64", rng.normal(size=n), [F.ChecksumSHA256Filter()])
    # Scale float.
    for bw in [1, 2, 4, 8]:
        case(f"scale_float_float64_bw{bw}", np.round(rng.normal(size=n) * 20, 1),
             [F.FloatScaleFilter(factor=0.5, offset=0.25, bytewidth=bw)])
        case(f"scale_float_float32_bw{bw}", np.round(rng.normal(size=n) * 20, 1).astype("float32"),
             [F.FloatScaleFilter(factor=0.1, offset=-1.0, bytewidth=bw)])
    # Chains.
    case("chain_byteshuffle_zstd_float64", rng.normal(size=n), [F.ByteShuffleFilter(), F.ZstdFilter(level=7)])
    case("chain_bitshuffle_lz4_int32", smooth("int32", n), [F.BitShuffleFilter(), F.LZ4Filter()])
    case("chain_dd_bwr_zstd_int64", smooth("int64", n),
         [F.DoubleDeltaFilter(), F.BitWidthReductionFilter(), F.ZstdFilter()])
    case("chain_md5_gzip_int16", smooth("int16", n), [F.ChecksumMD5Filter(), F.GzipFilter(level=4)])
    case("chain_gzip_sha256_int16", smooth("int16", n), [F.GzipFilter(level=4), F.ChecksumSHA256Filter()])
    case("chain_xor_byteshuffle_zstd_float32", rng.normal(size=n).astype("float32"),
         [F.XORFilter(), F.ByteShuffleFilter(), F.ZstdFilter()])
    case("chain_scale_delta_zstd_float64", np.round(rng.normal(size=n) * 20, 1),
         [F.FloatScaleFilter(factor=0.1, offset=0.0, bytewidth=4), F.DeltaFilter(), F.ZstdFilter()])
    case("chain_pd_bwr_sha256_bzip2_uint32", np.sort(ints("uint32", n, 0, 5000)),
         [F.PositiveDeltaFilter(), F.BitWidthReductionFilter(), F.ChecksumSHA256Filter(), F.Bzip2Filter()])
    case("chain_bwr_md5_byteshuffle_lz4_int32", ints("int32", n, -10, 10),
         [F.BitWidthReductionFilter(window=128), F.ChecksumMD5Filter(), F.ByteShuffleFilter(), F.LZ4Filter()])
    # More types.
    bools = rng.integers(0, 2, size=n).astype(bool)
    case("rle_bool", np.sort(bools), [F.RleFilter()])
    case("positive_delta_bool", np.sort(bools), [F.PositiveDeltaFilter()])
    case("bwr_uint8_passthrough", ints("uint8", n), [F.BitWidthReductionFilter()])
    case("xor_datetime_ms", smooth("int64", n).astype("datetime64[ms]"), [F.XORFilter()])
    case("byteshuffle_uint64", ints("uint64", n), [F.ByteShuffleFilter()])
    case("bitshuffle_uint16_4101", ints("uint16", 4101, 0, 300), [F.BitShuffleFilter()])
    case("double_delta_uint64_wide", ints("uint64", n, 0, 2**62), [F.DoubleDeltaFilter()])
    case("delta_uint64_wide", ints("uint64", n), [F.DeltaFilter()])
    case("chain_sha256_bitshuffle_zstd_int64", smooth("int64", n),
         [F.ChecksumSHA256Filter(), F.BitShuffleFilter(), F.ZstdFilter(level=2)])
    case("chain_md5_sha256_lz4_uint16", smooth("uint16", n),
         [F.ChecksumMD5Filter(), F.ChecksumSHA256Filter(), F.LZ4Filter()])
    # Several chunks: 150000 bytes of UINT8 and 20000 int64.
    case("multichunk_zstd_uint8", (np.arange(150000) // 7 % 251).astype("uint8"), [F.ZstdFilter()])
    case("multichunk_dd_gzip_int64", smooth("int64", 20000), [F.DoubleDeltaFilter(), F.GzipFilter()])
    # Var-sized strings.
    words = ["", "a", "tile", "tiledb", "filter pipeline", "ünïcødé", "x" * 40]
    strs = [words[i] for i in rng.integers(0, len(words), size=400)]
    runs = sorted(strs)
    for kind, dt in [("ascii", "ascii"), ("utf8", "U")]:
        vals = [s.encode("ascii", "replace").decode() if kind == "ascii" else s for s in strs]
        rvals = [s.encode("ascii", "replace").decode() if kind == "ascii" else s for s in runs]
        case(f"var_{kind}_rle", rvals, [F.RleFilter()], var=dt)
        case(f"var_{kind}_dictionary", vals, [F.DictionaryFilter()], var=dt)
        case(f"var_{kind}_rle_zstd", rvals, [F.RleFilter(), F.ZstdFilter()], var=dt)
        case(f"var_{kind}_dictionary_gzip_md5", vals, [F.DictionaryFilter(), F.GzipFilter(), F.ChecksumMD5Filter()], var=dt)
        case(f"var_{kind}_zstd", vals, [F.ZstdFilter()], var=dt)
    # Var data over several chunks (the var chunking heuristic).
    big = ["".join(chr(97 + (i * 7 + j) % 26) for j in range(int(rng.integers(1, 200)))) for i in range(1500)]
    case("var_ascii_multichunk_lz4", big, [F.LZ4Filter()], var="ascii")
    case("var_blob_multichunk_zstd", [s.encode() for s in big[:900]], [F.ZstdFilter()], var="blob")
    # A last cell larger than the chunk size closes its chunk at the tile's
    # end, so the var data ends with an empty chunk: the filters then run on
    # an empty input.
    cells = [bytes([i % 251]) * (i % 50) for i in range(40)] + [bytes(range(250)) * 280]
    for label, pipe in [
        ("md5_zstd", [F.ChecksumMD5Filter(), F.ZstdFilter()]),
        ("byteshuffle_gzip", [F.ByteShuffleFilter(), F.GzipFilter()]),
        # TileDB fails to write this one ("FilterBuffer error; no current
        # buffer"): bitshuffle on the empty chunk.
        ("bitshuffle_sha256_lz4", [F.BitShuffleFilter(), F.ChecksumSHA256Filter(), F.LZ4Filter()]),
        ("rle_xor_bzip2", [F.RleFilter(), F.XORFilter(), F.Bzip2Filter()]),
        ("dd_md5_bzip2", [F.DoubleDeltaFilter(), F.ChecksumMD5Filter(), F.Bzip2Filter()]),
        ("xor_none", [F.XORFilter(), F.NoOpFilter()]),
    ]:
        case(f"var_blob_trailing_empty_chunk_{label}", cells, pipe, var="blob")
    # TileDB's string RLE sizes the length field without the last run's
    # string: a 300-byte last string gets a 1-byte length (300 mod 256), and
    # TileDB then crashes reading its own tile. Written, never read back.
    case("var_ascii_rle_tiledb_writer_bug", ["a", "a", "x" * 300], [F.RleFilter()], var="ascii", no_read=True)
    # Nullable attribute: a validity tile.
    case("nullable_int32_zstd", smooth("int32", n), [F.ZstdFilter()], nullable=True)
    # WebP (2-D images).
    for fmt, depth in [("RGB", 3), ("RGBA", 4), ("BGR", 3), ("BGRA", 4)]:
        h, w = 24, 20
        img = (np.add.outer(np.arange(h) * 9, np.arange(w * depth) * 5) % 256).astype("uint8")
        for lossless in (True, False):
            case(f"webp_{fmt.lower()}_{'lossless' if lossless else 'lossy'}", img,
                 [F.WebpFilter(input_format=getattr(tiledb.filter.lt.WebpInputFormat, "WEBP_" + fmt),
                               quality=75.0, lossless=lossless)], image=(h, w * depth))
    # Encrypted array: AES-256-GCM appended to every pipeline.
    case("aes_zstd_int32", smooth("int32", n), [F.ZstdFilter()], encrypted=True)


def write_gz(path, data):
    # mtime 0 keeps the files identical from run to run.
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(data)


def create_and_write(uri, c, ctx):
    values = c["values"]
    filters = tiledb.FilterList(c["filters"])
    offsets_filters = tiledb.FilterList([tiledb.ZstdFilter(level=-1)])
    validity_filters = tiledb.FilterList([tiledb.RleFilter()])
    if "image" in c:
        h, w = c["image"]
        dom = tiledb.Domain(
            tiledb.Dim("y", domain=(0, h - 1), tile=h, dtype=np.uint32, ctx=ctx),
            tiledb.Dim("x", domain=(0, w - 1), tile=w, dtype=np.uint32, ctx=ctx),
            ctx=ctx,
        )
        attr = tiledb.Attr("a", dtype=np.uint8, filters=filters, ctx=ctx)
    else:
        cvn = c.get("cell_val_num", 1)
        cells = len(values) // cvn
        dom = tiledb.Domain(tiledb.Dim("d", domain=(0, cells - 1), tile=cells, dtype=np.uint64, ctx=ctx), ctx=ctx)
        if "var" in c:
            dtype = {"ascii": "ascii", "U": np.str_, "blob": np.bytes_}[c["var"]]
            attr = tiledb.Attr("a", dtype=dtype, var=True, filters=filters, ctx=ctx)
        else:
            dt = np.dtype(values.dtype)
            if cvn > 1:
                dt = np.dtype(",".join([dt.str] * cvn))
                values = np.ascontiguousarray(values).view(dt)
            attr = tiledb.Attr("a", dtype=dt, filters=filters, nullable=c.get("nullable", False), ctx=ctx)
    schema = tiledb.ArraySchema(domain=dom, attrs=[attr], sparse=False, offsets_filters=offsets_filters,
                                validity_filters=validity_filters, ctx=ctx)
    tiledb.Array.create(uri, schema, ctx=ctx)
    with tiledb.open(uri, "w", ctx=ctx) as A:
        if c.get("nullable"):
            A[:] = np.ma.masked_array(values, mask=(np.arange(len(values)) % 5 == 0))
        elif "var" in c:
            A[:] = np.array(values, dtype=object)
        else:
            A[:] = values
    if c.get("no_read"):
        return tiledb.ArraySchema.load(uri, ctx=ctx), np.array(values, dtype=object)
    with tiledb.open(uri, "r", ctx=ctx) as A:
        schema = A.schema
        got = A[:]["a"] if "image" not in c else A[:, :]["a"]
    return schema, got


def check_ours(ours_dir):
    build_cases()
    ok = True
    for c in CASES:
        ours = os.path.join(ours_dir, c["name"] + ".tile")
        if not os.path.exists(ours):
            continue
        cfg = {"sm.encryption_type": "AES_256_GCM", "sm.encryption_key": KEY} if c.get("encrypted") else {}
        ctx = tiledb.Ctx(tiledb.Config(cfg))
        tmp = tempfile.mkdtemp()
        uri = os.path.join(tmp, c["name"])
        _, expected = create_and_write(uri, c, ctx)
        frag_dir = os.path.join(uri, "__fragments")
        (frag,) = os.listdir(frag_dir)
        target = os.path.join(frag_dir, frag, "a0.tdb")
        if os.path.getsize(target) != os.path.getsize(ours):
            print(f"{c['name']}: sizes differ, cannot swap")
            ok = False
            continue
        shutil.copy(ours, target)
        with tiledb.open(uri, "r", ctx=ctx) as A:
            got = A[:]["a"]
        same = np.array_equal(got, expected)
        ok &= same
        print(f"{c['name']}: TileDB reads our tile {'correctly' if same else 'WRONGLY'}")
        shutil.rmtree(tmp)
    sys.exit(0 if ok else 1)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check-ours":
        return check_ours(sys.argv[2])
    build_cases()
    out = os.path.abspath(OUT)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    manifest = {
        "generator": "conformance/scripts/filter_vectors.py",
        "tiledb_py": tiledb.__version__,
        "libtiledb": ".".join(map(str, tiledb.libtiledb.version())),
        "cases": [],
    }
    tmp = tempfile.mkdtemp()
    for c in CASES:
        cfg = {}
        if c.get("encrypted"):
            cfg = {"sm.encryption_type": "AES_256_GCM", "sm.encryption_key": KEY}
        ctx = tiledb.Ctx(tiledb.Config(cfg))
        uri = os.path.join(tmp, c["name"])
        try:
            schema, got = create_and_write(uri, c, ctx)
        except tiledb.TileDBError as e:
            print(f"skip {c['name']}: TileDB refuses: {e}", file=sys.stderr)
            continue
        frag_dir = os.path.join(uri, "__fragments")
        (frag,) = os.listdir(frag_dir)
        frag_path = os.path.join(frag_dir, frag)
        version = int(frag.rsplit("_", 1)[1])
        attr = schema.attr(0)
        entry = {
            "name": c["name"],
            "datatype": DATATYPE_NAMES.get(np.dtype(attr.dtype).name, None),
            "version": version,
            "filters": [filter_json(f) for f in attr.filters],
            "max_chunk_size": 65536,
        }
        if c.get("encrypted"):
            entry["encryption_key"] = KEY
        if c.get("no_read"):
            # The values are what was written; TileDB cannot read them back.
            entry["tiledb_cannot_read"] = True
        base = os.path.join(out, c["name"])
        if "var" in c:
            entry["datatype"] = {"ascii": "STRING_ASCII", "U": "STRING_UTF8", "blob": "CHAR"}[c["var"]]  # np.bytes_ is TileDB CHAR
            entry["offsets_filters"] = [filter_json(f) for f in schema.offsets_filters]
            shutil.copy(os.path.join(frag_path, "a0_var.tdb"), base + ".tile")
            shutil.copy(os.path.join(frag_path, "a0.tdb"), base + ".offsets")
            cells = [x if isinstance(x, bytes) else x.encode("utf-8") for x in got]
            data = b"".join(cells)
            offs, pos = [], 0
            for x in cells:
                offs.append(pos)
                pos += len(x)
            write_gz(base + ".cells.gz", np.array(offs, dtype="<u8").tobytes())
            entry["cell_count"] = len(cells)
            entry["cell_size"] = 1
        else:
            shutil.copy(os.path.join(frag_path, "a0.tdb"), base + ".tile")
            arr = np.ascontiguousarray(got.data if np.ma.isMaskedArray(got) else got)
            data = arr.tobytes()
            entry["cell_count"] = int(arr.size)
            entry["cell_size"] = int(arr.dtype.itemsize)
            if arr.dtype.fields:
                (first, _), *_ = arr.dtype.fields.values()
                entry["datatype"] = DATATYPE_NAMES[first.name]
            if "image" in c:
                entry["filters"][0]["y_extent"], entry["filters"][0]["x_extent"] = c["image"]
        if c.get("nullable"):
            shutil.copy(os.path.join(frag_path, "a0_validity.tdb"), base + ".validity")
            entry["validity_filters"] = [filter_json(f) for f in schema.validity_filters]
            mask = np.ma.getmaskarray(got)
            entry["validity_sha256"] = hashlib.sha256((~mask).astype("uint8").tobytes()).hexdigest()
        write_gz(base + ".values.gz", data)
        entry["values_len"] = len(data)
        entry["values_sha256"] = hashlib.sha256(data).hexdigest()
        manifest["cases"].append(entry)
    shutil.rmtree(tmp)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=0)
    total = sum(os.path.getsize(os.path.join(out, p)) for p in os.listdir(out))
    print(f"{len(manifest['cases'])} cases, {total} bytes in {out}")


if __name__ == "__main__":
    main()
