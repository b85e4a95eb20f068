"""Random arrays written and read by TileDB, for differential tests of a reader.

    .venv-tiledb/bin/python conformance/scripts/random_arrays.py SEED COUNT OUT_DIR

Pinned to tiledb-py 0.36.1 (TileDB 2.30). For each i in 0..COUNT it draws a random case from
the seed (random schema: dense or sparse, 1-2 dimensions of several types, 1-4 attributes of
random datatypes, var-sized, multi-value and nullable, random filter pipelines, orders,
capacity, duplicates; then several fragments at increasing timestamps, deletes, metadata puts
and deletes), replays it with TileDB through the conformance kit's own replay code
(`tdbcase.replay`), runs a set of reads (layouts, ranges, time travel, metadata, schema)
through `tdbcase.run_read`, and writes under OUT_DIR/rand-<seed>-<i>/:

    case.json      the case (the same structure as conformance/cases/*.toml)
    expected.json  {"case": ..., "reads": [{"id", ... canonical result as in the corpus}]}
    array/         the array TileDB wrote

A case TileDB refuses to write is redrawn (with the next sub-seed) and noted in
"rejected" of expected.json.
"""

import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tiledb  # noqa: E402

import tdbcase  # noqa: E402

PINNED_TILEDB_PY = "0.36.1"

INT_TYPES = ["INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64"]
INT_RANGE = {
    "INT8": (-128, 127), "INT16": (-32768, 32767), "INT32": (-2**31, 2**31 - 1), "INT64": (-2**63, 2**63 - 1),
    "UINT8": (0, 255), "UINT16": (0, 65535), "UINT32": (0, 2**32 - 1), "UINT64": (0, 2**64 - 1),
}
GENERAL_FILTERS = ["ZSTD", "GZIP", "LZ4", "BZIP2", "CHECKSUM_MD5", "CHECKSUM_SHA256", "BYTESHUFFLE", "BITSHUFFLE"]
SIZE_KEEPING = {"BYTESHUFFLE", "BITSHUFFLE", "CHECKSUM_MD5", "CHECKSUM_SHA256", "XOR", "DELTA"}
INT_FILTERS = ["DELTA", "DOUBLE_DELTA", "BIT_WIDTH_REDUCTION", "XOR", "RLE"]


def pick_filters(r, t, var):
    out = []
    for _ in range(r.randint(0, 3)):
        choices = list(GENERAL_FILTERS)
        # Typed filters only where their input is still whole values: after a
        # compressor, TileDB's DELTA/DOUBLE_DELTA drop the tail of a buffer that
        # is not a whole number of values and read back uninitialized bytes
        # (different values on every read), so there is no answer to compare.
        whole_values = all(f["name"] in SIZE_KEEPING for f in out)
        if t in INT_TYPES and not var and whole_values:
            choices += INT_FILTERS
        if t in ("FLOAT32", "FLOAT64") and not var and whole_values:
            choices += ["XOR"]
        if t in ("STRING_ASCII", "STRING_UTF8") and var and not out:
            choices += ["RLE", "DICTIONARY"]
        name = r.choice(choices)
        f = {"name": name}
        if name in ("ZSTD", "GZIP", "BZIP2"):
            f["level"] = r.choice([1, 3, 5])
        if name == "BIT_WIDTH_REDUCTION":
            f["max_window"] = r.choice([8, 64, 256])
        out.append(f)
    return out


def int_value(r, t, lo=None, hi=None):
    a, b = INT_RANGE[t]
    if lo is not None:
        a, b = max(a, lo), min(b, hi)
    if r.random() < 0.1:
        return r.choice([a, b])
    return r.randint(max(a, -1000), min(b, 1000)) if a <= 0 <= b or a < 1000 else r.randint(a, b)


def value(r, t):
    if t in INT_TYPES:
        return int_value(r, t)
    if t in ("DATETIME_MS", "DATETIME_DAY", "TIME_NS"):
        return r.randint(-10**6, 10**6)
    if t in ("FLOAT32", "FLOAT64"):
        return r.choice([0.5, -1.25, 3.0, 1e10, -0.0, float(r.randint(-100, 100)) / 4])
    if t in ("STRING_ASCII", "STRING_UTF8"):
        alphabet = "abcxyz" if t == "STRING_ASCII" else "abcé☃"
        return "".join(r.choice(alphabet) for _ in range(r.randint(0, 6)))
    if t == "BLOB":
        return "".join(r.choice("0123456789abcdef") for _ in range(2 * r.randint(0, 5)))
    if t == "BOOL":
        return r.randint(0, 1)
    raise ValueError(t)


def attr_cell(r, a):
    t, cvn = a["type"], a.get("cell_val_num", 1)
    if t in ("STRING_ASCII", "STRING_UTF8", "BLOB"):
        return value(r, t)
    if cvn == "var":
        return [value(r, t) for _ in range(r.randint(0, 3))]
    if cvn == 1:
        return value(r, t)
    return [value(r, t) for _ in range(cvn)]


def random_attr(r, i, dense):
    t = r.choice(INT_TYPES + ["FLOAT32", "FLOAT64", "STRING_ASCII", "STRING_UTF8", "BLOB", "BOOL", "DATETIME_MS", "TIME_NS"])
    a = {"name": f"a{i}", "type": t}
    if t in ("STRING_ASCII", "STRING_UTF8", "BLOB"):
        a["cell_val_num"] = "var"
    elif t not in ("BOOL",) and r.random() < 0.25:
        a["cell_val_num"] = r.choice(["var", 2, 3])
    if r.random() < 0.3:
        a["nullable"] = True
    var = a.get("cell_val_num") == "var"
    a["filters"] = pick_filters(r, t, var)
    return a


def random_case(seed):
    r = random.Random(seed)
    dense = r.random() < 0.4
    ndim = r.choice([1, 1, 2])
    dims = []
    # TileDB requires one datatype for all dimensions of a dense array.
    dense_type = r.choice(["INT32", "INT64", "UINT8", "INT16", "UINT64"])
    for j in range(ndim):
        if dense:
            t = dense_type
        else:
            t = r.choice(["INT32", "INT64", "UINT16", "INT8", "FLOAT64", "STRING_ASCII"])
        if t == "STRING_ASCII":
            dims.append({"name": f"d{j}", "type": t})
            continue
        lo = 0 if t.startswith("U") else r.choice([-5, 0, 3])
        size = r.randint(4, 12)
        d = {"name": f"d{j}", "type": t, "domain": [lo, lo + size - 1], "tile": r.randint(1, size)}
        if t == "FLOAT64":
            d = {"name": f"d{j}", "type": t, "domain": [float(lo), float(lo + size)], "tile": float(r.randint(1, size))}
        if r.random() < 0.3:
            d["filters"] = pick_filters(r, t, False)
        dims.append(d)
    attrs = [random_attr(r, i, dense) for i in range(r.randint(1, 4))]
    schema = {
        "type": "dense" if dense else "sparse",
        "cell_order": r.choice(["row-major", "col-major"] + ([] if dense else ["hilbert"])),
        "tile_order": r.choice(["row-major", "col-major"]),
        "dims": dims,
        "attrs": attrs,
    }
    if not dense:
        schema["capacity"] = r.randint(2, 6)
        schema["allows_duplicates"] = r.random() < 0.3
    steps = []
    ts = 0
    for _ in range(r.randint(1, 4)):
        ts += 10
        if dense:
            sub = []
            for d in dims:
                lo, hi = d["domain"]
                a = r.randint(lo, hi)
                b = r.randint(a, min(hi, a + 5))
                sub.append([a, b])
            n = 1
            for a, b in sub:
                n *= b - a + 1
            step = {"op": "write", "timestamp": ts, "subarray": sub, "layout": "row-major"}
        else:
            n = r.randint(1, 8)
            coords = {}
            seen = set()
            rows = []
            for _ in range(n * 3):
                c = []
                for d in dims:
                    if d["type"] == "STRING_ASCII":
                        c.append("".join(r.choice("abc") for _ in range(r.randint(0, 3))))
                    elif d["type"] == "FLOAT64":
                        c.append(float(r.randint(int(d["domain"][0]) * 4, int(d["domain"][1]) * 4)) / 4)
                    else:
                        c.append(r.randint(d["domain"][0], d["domain"][1]))
                if tuple(c) in seen and not schema["allows_duplicates"]:
                    continue
                seen.add(tuple(c))
                rows.append(c)
                if len(rows) == n:
                    break
            n = len(rows)
            for j, d in enumerate(dims):
                coords[d["name"]] = [row[j] for row in rows]
            step = {"op": "write", "timestamp": ts, "coords": coords}
        step["data"] = {a["name"]: [attr_cell(r, a) for _ in range(n)] for a in attrs}
        val = {a["name"]: [r.choice([0, 1, 1]) for _ in range(n)] for a in attrs if a.get("nullable")}
        if val:
            step["validity"] = val
        steps.append(step)
        if r.random() < 0.4:
            ts += 10
            key = r.choice(["k1", "k2", "k3"])
            if r.random() < 0.2:
                steps.append({"op": "meta_delete", "timestamp": ts, "key": key})
            elif r.random() < 0.5:
                steps.append({"op": "meta_put", "timestamp": ts, "key": key, "type": "INT32", "values": [r.randint(-5, 5) for _ in range(r.randint(1, 3))]})
            else:
                steps.append({"op": "meta_put", "timestamp": ts, "key": key, "type": "STRING_UTF8", "values": "v" + str(r.randint(0, 99))})
        deletable = [
            f for f in attrs + dims
            if f["type"] in ("INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32")
            and f.get("cell_val_num", 1) == 1 and not f.get("nullable")
        ]
        if not dense and deletable and r.random() < 0.6:
            ts += 10

            def term():
                f = r.choice(deletable)
                op = r.choice(["<", ">", "==", "!=", "<=", ">="])
                lo, hi = f.get("domain", [-50, 50])
                return f"{f['name']} {op} {r.randint(lo, hi) if f['type'].startswith('U') or 'domain' in f else r.randint(-50, 50)}"

            cond = term()
            if r.random() < 0.4:
                cond = f"{cond} {r.choice(['and', 'or'])} {term()}"
            steps.append({"op": "delete", "timestamp": ts, "condition": cond})
    # Later history: consolidation (with or without vacuuming), consolidated
    # fragment metadata, schema evolution.
    if r.random() < 0.3:
        steps.append({"op": "consolidate", "mode": "fragments"})
        if r.random() < 0.5:
            steps.append({"op": "vacuum", "mode": "fragments"})
    if r.random() < 0.2:
        steps.append({"op": "consolidate", "mode": "fragment_meta"})
    if r.random() < 0.15:
        steps.append({"op": "consolidate", "mode": "array_meta"})
    if r.random() < 0.2:
        evolve = {"op": "evolve"}
        if len(attrs) > 1 and r.random() < 0.5:
            evolve["drop_attrs"] = [attrs[-1]["name"]]
        else:
            evolve["add_attrs"] = [random_attr(r, len(attrs) + 10, dense)]
        steps.append(evolve)
    reads = [
        {"id": "all-row", "layout": "row-major"},
        {"id": "all-col", "layout": "col-major"},
        {"id": "all-global", "layout": "global"},
        {"id": "meta", "kind": "metadata"},
    ]
    if not dense:
        # TileDB refuses unordered dense reads; the kit's schema dump fails on dense arrays.
        reads += [{"id": "all-unordered", "layout": "unordered"}, {"id": "schema", "kind": "schema"}]
    for t in range(10, ts + 1, 10):
        reads.append({"id": f"at-{t}", "layout": "global", "timestamp": t})
    if ts >= 20:
        reads.append({"id": "between", "layout": "global", "timestamp_range": [15, ts]})
    for k in range(2):
        ranges = []
        for d in dims:
            if d["type"] == "STRING_ASCII":
                a, b = sorted("".join(r.choice("abc") for _ in range(r.randint(0, 2))) for _ in range(2))
                rs = [[a, b]]
                if k == 1 and r.random() < 0.5:
                    # A second range before it: unsorted, maybe overlapping.
                    c, e = sorted("".join(r.choice("abc") for _ in range(r.randint(0, 2))) for _ in range(2))
                    rs.insert(0, [c, e])
            elif d["type"] == "FLOAT64":
                lo, hi = d["domain"]
                a = r.randint(int(lo) * 4, int(hi) * 4) / 4
                b = r.randint(int(a * 4), int(hi) * 4) / 4
                rs = [[a, b]]
            else:
                lo, hi = d["domain"]
                a = r.randint(lo, hi)
                b = r.randint(a, hi)
                rs = [[a, b]]
                if r.random() < 0.4 and b < hi:
                    rs.append([r.randint(b + 1, hi), hi])
                if k == 1 and r.random() < 0.5:
                    # Unsorted and overlapping ranges.
                    c = r.randint(lo, hi)
                    rs.insert(0, [c, r.randint(c, hi)])
            ranges.append(rs)
        reads.append({"id": f"ranges-{k}", "layout": r.choice(["row-major", "col-major", "global"]), "ranges": ranges})
    case = {"id": f"rand-{seed}", "schema": schema, "steps": steps, "reads": reads}
    if r.random() < 0.1:
        case["encryption"] = {"type": "AES_256_GCM", "key": "".join(r.choice("abcdef0123456789") for _ in range(32))}
    return case


def build(case, case_dir):
    """Replays the case and dumps TileDB's reads; returns a rejection reason or None."""
    try:
        tdbcase.replay(case, case_dir)
    except (tiledb.TileDBError, tdbcase.Unsupported, ValueError, TypeError, OverflowError) as e:
        return str(e)[:300]
    reads = []
    for read in case["reads"]:
        try:
            result = tdbcase.run_read(case_dir, case, read)
        except (tiledb.TileDBError, tdbcase.Unsupported) as e:
            result = {"oracle_error": str(e)[:300]}
        reads.append({"id": read["id"], **result})
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
    with open(os.path.join(case_dir, "reads.json"), "w") as f:
        json.dump(reads, f, indent=1)
    return None


def build_isolated(case, case_dir):
    """`build` in a child process: TileDB 2.30 crashes on some random inputs."""
    pid = os.fork()
    if pid == 0:
        reason = build(case, case_dir)
        if reason is not None:
            with open(os.path.join(case_dir, "rejected.txt"), "w") as f:
                f.write(reason)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        return f"TileDB crashed (wait status {status})"
    rejected = os.path.join(case_dir, "rejected.txt")
    if os.path.exists(rejected):
        with open(rejected) as f:
            return f.read()
    return None


def main():
    import shutil

    if tiledb.__version__ != PINNED_TILEDB_PY:
        sys.exit(f"tiledb-py {tiledb.__version__} is not the pinned {PINNED_TILEDB_PY}")
    seed, count, out_dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    for i in range(count):
        rejected = []
        sub = 0
        while True:
            case_seed = seed * 100003 + i * 1009 + sub
            case = random_case(case_seed)
            case_dir = os.path.join(out_dir, f"rand-{seed}-{i}")
            if os.path.exists(case_dir):
                shutil.rmtree(case_dir)
            os.makedirs(case_dir)
            reason = build_isolated(case, case_dir)
            if reason is None:
                break
            rejected.append({"seed": case_seed, "reason": reason})
            sub += 1
            if sub > 20:
                sys.exit(f"{case_dir}: 20 random cases in a row rejected")
        with open(os.path.join(case_dir, "reads.json")) as f:
            reads = json.load(f)
        os.remove(os.path.join(case_dir, "reads.json"))
        with open(os.path.join(case_dir, "expected.json"), "w") as f:
            json.dump({"case": case["id"], "rejected": rejected, "reads": reads}, f, indent=1)
        print(case_dir, len(rejected), "rejected")


if __name__ == "__main__":
    main()
