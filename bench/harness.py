"""Reads the same arrays with TileDB and with tiledb-runtime and compares.

Run through `bench/run` (which finds TileDB's Python); see README "Benchmarks".
Arrays are created by TileDB once and cached under
target/bench-data/<name>-<hash of their parameters>/. Every measurement runs
in a fresh child process (one per side and workload) so that each side's
peak RSS (VmHWM) is its own.
"""

import argparse
import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

import write_workloads

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# Bump when the way arrays are created changes, so caches are rebuilt.
DATA_VERSION = 1


def arrays(scale, fragments=None):
    """The arrays of the benchmark at `scale` (1 = full size); `fragments`
    overrides the fragment count of the many-fragment arrays."""
    side = max(256, int(8192 * math.sqrt(scale)) // 64 * 64)
    tile = min(1024, side)
    out = {}
    for name, pipeline in [
        ("dense-none", []),
        ("dense-zstd", ["zstd1"]),
        ("dense-shuffle-lz4", ["byteshuffle", "lz4"]),
    ]:
        out[name] = dict(kind="dense", side=side, tile=tile, filters=pipeline, seed=1)
    # A float attribute, for the reads with coordinates.
    out["dense-float"] = dict(
        kind="dense", side=side, tile=tile, filters=[], seed=4, dtype="float64"
    )
    cells = max(20_000, int(20_000_000 * scale))
    sparse_side = int(math.sqrt(cells / 0.002))
    out["sparse-zstd"] = dict(
        kind="sparse",
        cells=cells,
        side=sparse_side,
        capacity=10_000,
        filters=["zstd1"],
        seed=2,
    )
    strings = max(10_000, int(5_000_000 * scale))
    for name, pipeline in [
        ("strings-plain", []),
        ("strings-rle", ["rle"]),
        ("strings-dict", ["dictionary"]),
    ]:
        out[name] = dict(
            kind="strings", cells=strings, tile=100_000, filters=pipeline, seed=3
        )
    fragments = fragments or max(20, int(5000 * scale))
    for name, consolidated in [("frags", False), ("frags-consolidated", True)]:
        out[name] = dict(
            kind="fragments", fragments=fragments, consolidated_metadata=consolidated
        )
    return out


def workloads(scale, specs, s3=False):
    dense_side = specs["dense-none"]["side"]
    sub = int(dense_side * math.sqrt(0.1))
    lo = dense_side // 4
    dense_sub = [[lo, lo + sub - 1], [lo, lo + sub - 1]]
    sparse_side = specs["sparse-zstd"]["side"]
    small = max(8, sparse_side // 32)
    slo = sparse_side // 3
    out = []
    for name in ["dense-none", "dense-zstd", "dense-shuffle-lz4"]:
        base = dict(array=name, kind="dense", attrs=["a"], layout="row-major")
        out.append(dict(base, name=f"{name} full"))
        out.append(dict(base, name=f"{name} 10%", subarray=dense_sub))
    # Dense reads with coordinates (tiledb-py `A.query(coords=True)[...]`,
    # as `.df[]` reads): both dimensions and the attribute, in either order,
    # and the same reads without coordinates for comparison.
    for name, what in [("dense-none", "int64"), ("dense-float", "float64")]:
        for layout in ["row-major", "col-major"]:
            base = dict(array=name, kind="dense", attrs=["a"], layout=layout)
            label = f"{what} {layout}"
            out.append(dict(base, name=f"coords {label}", dims=["row", "col"]))
            out.append(dict(base, name=f"coords {label} 10%", dims=["row", "col"], subarray=dense_sub))
            out.append(dict(base, name=f"no coords {label}"))
    base = dict(array="sparse-zstd", kind="sparse", attrs=["v"], dims=["x", "y"])
    out.append(dict(base, name="sparse unordered", layout="unordered"))
    out.append(dict(base, name="sparse row-major", layout="row-major"))
    out.append(
        dict(
            base,
            name="sparse small subarray",
            layout="row-major",
            subarray=[[slo, slo + small - 1], [slo, slo + small - 1]],
        )
    )
    for name in ["strings-plain", "strings-rle", "strings-dict"]:
        out.append(
            dict(array=name, name=name, kind="strings", attrs=["s"], layout="row-major")
        )
    for name in ["frags", "frags-consolidated"]:
        out.append(dict(array=name, name=f"open {name}", kind="open"))
        if s3:
            # Over a network, reading every fragment is the other cost
            # TileDB users meet (one request per file at least).
            out.append(
                dict(array=name, name=f"read {name}", kind="sparse", attrs=["v"], dims=["x"], layout="row-major")
            )
    if s3:
        return out
    # Our decode on one thread against the raw codec alone, on the same
    # stored bytes (only our process runs these).
    for name, attr in [("dense-zstd", "a"), ("dense-shuffle-lz4", "a"), ("sparse-zstd", "v")]:
        out.append(dict(array=name, name=f"decode {name}", kind="decode", attrs=[attr]))
    return out


def array_path(name, spec):
    digest = hashlib.sha256(
        json.dumps([DATA_VERSION, spec], sort_keys=True).encode()
    ).hexdigest()[:12]
    return os.path.join(ROOT, "target", "bench-data", f"{name}-{digest}")


def ensure_array(python, name, spec):
    path = array_path(name, spec)
    done = os.path.join(path, ".bench-complete")
    if os.path.exists(done):
        return path
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    start = time.time()
    print(f"  creating {name} with TileDB ...", file=sys.stderr, flush=True)
    subprocess.run(
        [python, os.path.join(HERE, "tiledb_side.py"), "create", json.dumps(dict(spec, path=path))],
        check=True,
    )
    with open(done, "w") as f:
        f.write(json.dumps(spec) + "\n")
    print(f"  created {name} in {time.time() - start:.1f} s", file=sys.stderr, flush=True)
    return path


def run_side(command, timeout):
    try:
        out = subprocess.run(
            command, check=True, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    except subprocess.CalledProcessError as e:
        return {"error": (e.stderr or e.stdout).strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def fmt_rate(value, unit):
    if value is None:
        return "-"
    for factor, prefix in [(1e9, "G"), (1e6, "M"), (1e3, "k")]:
        if value >= factor:
            return f"{value / factor:.2f} {prefix}{unit}"
    return f"{value:.1f} {unit}"


def summarize(result):
    if "error" in result:
        return None
    median = statistics.median(result["times"])
    return dict(
        median=median,
        cpu=statistics.median(result.get("cpu_times") or [0]),
        mbps=result["bytes"] / median / 1e6 if result["bytes"] else None,
        cells=result["cells"] / median if result["cells"] else None,
        rss=result["peak_rss_kib"] / 1024,
        count=result["cells"],
        nbytes=result["bytes"],
        digest=result.get("digest"),
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="data size factor (1 = full)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per side (median)")
    parser.add_argument("--smoke", action="store_true", help="--scale 0.002 --runs 1: a quick check")
    parser.add_argument("--only", default="", help="comma-separated substrings of workload names")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per side and workload")
    parser.add_argument("--python", required=True, help="TileDB's Python")
    parser.add_argument("--ours", required=True, help="the tiledb-bench binary")
    parser.add_argument("--create-only", action="store_true", help="create the arrays, read nothing")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument(
        "--s3",
        action="store_true",
        help="read the arrays from a local S3 server instead, requests counted",
    )
    parser.add_argument(
        "--server",
        choices=["s3s", "moto"],
        default="s3s",
        help="with --s3: the server; s3s (bench/s3-server, its own process) or moto (in this process, behind a proxy)",
    )
    parser.add_argument("--s3-server", help="the tiledb-bench-s3-server binary (bench/run passes it)")
    parser.add_argument("--fragments", type=int, help="fragments of the many-fragment arrays")
    parser.add_argument(
        "--ranged-server",
        action="store_true",
        help="with --s3 --server moto: moto reads only the range a GET asks, as S3 does, not the whole object",
    )
    args = parser.parse_args()
    if args.smoke:
        args.scale, args.runs = 0.002, 1

    specs = arrays(args.scale, args.fragments)
    chosen = [
        w
        for w in workloads(args.scale, specs, args.s3)
        if not args.only or any(s and s in w["name"] for s in args.only.split(","))
    ]
    paths = {}
    for w in chosen:
        if w["array"] not in paths:
            paths[w["array"]] = ensure_array(args.python, w["array"], specs[w["array"]])

    if args.create_only:
        return
    if args.s3:
        import s3

        print(f"scale {args.scale}, on S3 ({args.server}), median of {args.runs} alternating runs", flush=True)
        rows, failures = s3.run_workloads(args, chosen, paths, run_side, HERE)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(dict(scale=args.scale, runs=args.runs, s3=True, rows=rows), f, indent=1)
        if failures:
            print(f"\nFAILED: {', '.join(failures)} (an error, or results that differ from TileDB's)")
            sys.exit(1)
        return
    failures = []
    rows = []
    header = (
        f"{'workload':<26} {'cells':>11} {'result MB':>9} | {'TileDB':>11} {'ours':>11} "
        f"{'ours/TileDB':>11} | {'TileDB cells/s':>14} {'ours cells/s':>14} | "
        f"{'CPU s TileDB':>12} {'ours':>7} | {'peak RSS MiB TileDB':>19} {'ours':>6}"
    )
    print(f"scale {args.scale}, median of {args.runs} runs, {os.cpu_count()} cores", flush=True)
    print(header)
    print("-" * len(header), flush=True)
    decodes = [w for w in chosen if w["kind"] == "decode"]
    for w in [w for w in chosen if w["kind"] != "decode"]:  # reads
        spec = dict(w, path=paths[w["array"]], runs=args.runs)
        theirs = run_side([args.python, os.path.join(HERE, "tiledb_side.py"), "read", json.dumps(spec)], args.timeout)
        ours = run_side([args.ours, json.dumps(spec)], args.timeout)
        t, o = summarize(theirs), summarize(ours)
        if w["kind"] == "open":
            rate = lambda s: fmt_rate(1 / s["median"], "open/s") if s else "error"
            ratio = t["median"] / o["median"] if t and o else None
        else:
            rate = lambda s: fmt_rate(s["mbps"] * 1e6, "B/s") if s and s["mbps"] else "error"
            ratio = o["mbps"] / t["mbps"] if t and o and t["mbps"] and o["mbps"] else None
        cells_rate = lambda s: fmt_rate(s["cells"], "") if s and s["cells"] else "-"
        rss = lambda s: f"{s['rss']:.0f}" if s else "-"
        cpu = lambda s: f"{s['cpu']:.3f}" if s else "-"
        count = (t or o or {}).get("count", 0)
        nbytes = (t or o or {}).get("nbytes", 0) / 1e6
        mismatch = t and o and w["kind"] != "open" and (t["count"], t["nbytes"]) != (o["count"], o["nbytes"])
        # Ordered reads return the same cells in the same order on both
        # sides: their contents are compared too (a digest of each side's
        # buffers, computed outside the timed call).
        differ = t and o and t["digest"] and o["digest"] and t["digest"] != o["digest"]
        if mismatch or differ or not t or not o:
            failures.append(w["name"])
        print(
            f"{w['name']:<26} {count:>11} {nbytes:>9.1f} | {rate(t):>11} {rate(o):>11} "
            f"{(format(ratio, '.2f') + 'x' if ratio else '-'):>11} | {cells_rate(t):>14} {cells_rate(o):>14} | "
            f"{cpu(t):>12} {cpu(o):>7} | {rss(t):>19} {rss(o):>6}"
            + (f"  RESULTS DIFFER: TileDB {t['count']} cells {t['nbytes']} B, ours {o['count']} cells {o['nbytes']} B" if mismatch else "")
            + ("  CONTENTS DIFFER (digests of the results)" if differ and not mismatch else ""),
            flush=True,
        )
        for side, r in [("TileDB", theirs), ("ours", ours)]:
            if "error" in r:
                print(f"    {side}: {r['error']}", flush=True)
        rows.append(dict(workload=w["name"], tiledb=theirs, ours=ours, ratio=ratio))
    if decodes:
        print()
        head = (
            f"{'decode, one thread':<26} {'codec':>6} {'tiles':>6} {'MB':>8} | "
            f"{'raw codec':>11} {'ours':>11} {'ours/raw':>9}"
        )
        print(head)
        print("-" * len(head), flush=True)
    for w in decodes:
        spec = dict(w, path=paths[w["array"]], runs=args.runs)
        r = run_side([args.ours, json.dumps(spec)], args.timeout)
        if "error" in r:
            print(f"{w['name']:<26} error: {r['error']}", flush=True)
            rows.append(dict(workload=w["name"], ours=r))
            failures.append(w["name"])
            continue
        ours_rate = r["bytes"] / statistics.median(r["ours_times"])
        raw_rate = r["bytes"] / statistics.median(r["raw_times"])
        print(
            f"{w['name']:<26} {r['codec']:>6} {r['tiles']:>6} {r['bytes'] / 1e6:>8.1f} | "
            f"{fmt_rate(raw_rate, 'B/s'):>11} {fmt_rate(ours_rate, 'B/s'):>11} "
            f"{ours_rate / raw_rate:>8.2f}x",
            flush=True,
        )
        rows.append(dict(workload=w["name"], ours=r, ratio=ours_rate / raw_rate))
    write_workloads.run(args, run_side, fmt_rate, failures, rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(scale=args.scale, runs=args.runs, rows=rows), f, indent=1)
    if failures:
        print(f"\nFAILED: {', '.join(failures)} (an error, or results that differ from TileDB's)")
        sys.exit(1)


if __name__ == "__main__":
    main()
