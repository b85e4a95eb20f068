"""Write workloads: TileDB and tiledb-runtime write the same data into copies
of the same empty array (made by TileDB) in the same run; see README
"Benchmarks". Each side runs in its own child process per workload, loads
the input columns from raw files first and times only the write (or the
consolidation); peak RSS is the child's VmHWM. After the timed runs, TileDB
reads both outputs and the cells must be equal (the check `--smoke` makes).
"""

import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# Bump when the way inputs are prepared changes, so caches are rebuilt.
DATA_VERSION = 1


def specs(scale):
    """The write workloads at `scale` (1 = full size), by name."""
    side = max(256, int(8192 * math.sqrt(scale)) // 64 * 64)
    out = {}
    for name, pipeline in [
        ("none", []),
        ("zstd-1", ["zstd1"]),
        ("shuffle-lz4", ["byteshuffle", "lz4"]),
    ]:
        out[f"write dense {name}"] = dict(
            kind="dense", side=side, tile=min(1024, side), filters=pipeline, seed=11
        )
    cells = max(20_000, int(20_000_000 * scale))
    sparse_side = int(math.sqrt(cells / 0.002))
    for order in ["unordered", "global"]:
        out[f"write sparse {order}"] = dict(
            kind="sparse",
            cells=cells,
            side=sparse_side,
            tile=max(1, sparse_side // 10),
            capacity=10_000,
            filters=["zstd1"],
            order=order,
            seed=12,
        )
    out["write strings"] = dict(
        kind="strings", cells=max(10_000, int(5_000_000 * scale)), tile=100_000, filters=[], seed=13
    )
    out["consolidate fragments"] = dict(
        kind="consolidate",
        fragments=max(20, int(1000 * math.sqrt(scale))),
        cells_per_fragment=100,
        filters=["zstd1"],
        seed=14,
    )
    return out


def input_dir(name, spec):
    digest = hashlib.sha256(json.dumps([DATA_VERSION, spec], sort_keys=True).encode()).hexdigest()[:12]
    return os.path.join(ROOT, "target", "bench-data", f"{name.replace(' ', '-')}-{digest}")


def prepare(python, name, spec):
    path = input_dir(name, spec)
    done = os.path.join(path, ".bench-complete")
    if not os.path.exists(done):
        if os.path.exists(path):
            shutil.rmtree(path)
        os.makedirs(path)
        start = time.time()
        print(f"  preparing {name} with TileDB ...", file=sys.stderr, flush=True)
        subprocess.run([python, os.path.join(HERE, "tiledb_write.py"), "prepare", json.dumps(dict(spec, dir=path))], check=True)
        open(done, "w").write(json.dumps(spec) + "\n")
        print(f"  prepared {name} in {time.time() - start:.1f} s", file=sys.stderr, flush=True)
    return path


def input_bytes(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path) if f.endswith(".bin"))


def run(args, run_side, fmt_rate, failures, rows):
    chosen = {
        n: s
        for n, s in specs(args.scale).items()
        if not args.only or any(p and p in n for p in args.only.split(","))
    }
    if not chosen:
        return
    header = (
        f"{'write workload':<26} {'input MB':>9} | {'TileDB':>11} {'ours':>11} {'ours/TileDB':>11} | "
        f"{'median s TileDB':>15} {'ours':>7} | {'CPU s TileDB':>12} {'ours':>6} | "
        f"{'peak RSS MiB TileDB':>19} {'ours':>6} | cells equal"
    )
    print()
    print(header)
    print("-" * len(header), flush=True)
    # This run's outputs, in a folder of its own beside the cached inputs (two
    # runs at once write apart), removed at the end however the run ends.
    data = os.path.join(ROOT, "target", "bench-data")
    os.makedirs(data, exist_ok=True)
    outputs = tempfile.mkdtemp(prefix="outputs-", dir=data)
    try:
        for name, spec in chosen.items():
            run_workload(args, run_side, fmt_rate, failures, rows, name, spec, outputs)
    finally:
        shutil.rmtree(outputs, ignore_errors=True)


def run_workload(args, run_side, fmt_rate, failures, rows, name, spec, outputs):
    """One write workload, both sides; its outputs below `outputs`."""
    path = prepare(args.python, name, spec)
    out = lambda side: os.path.join(outputs, f"{name.replace(' ', '-')}-{side}")
    results = {}
    for side in ["tiledb", "ours"]:
        job = dict(spec, dir=path, out=out(side), runs=args.runs)
        command = (
            [args.python, os.path.join(HERE, "tiledb_write.py"), "write", json.dumps(job)]
            if side == "tiledb"
            else [args.ours, json.dumps(dict(job, kind="write-" + spec["kind"]))]
        )
        results[side] = run_side(command, args.timeout)
    # TileDB reads both outputs: the same cells, whatever wrote them.
    cells = {}
    for side in ["tiledb", "ours"]:
        if "error" not in results[side]:
            job = dict(spec, out=out(side))
            cells[side] = run_side([args.python, os.path.join(HERE, "tiledb_write.py"), "cells", json.dumps(job)], args.timeout)
    for side in ["tiledb", "ours"]:
        # Outputs are checked; only the inputs stay cached (disk is short).
        shutil.rmtree(out(side), ignore_errors=True)
    t, o = cells.get("tiledb", {}), cells.get("ours", {})
    equal = bool(t.get("digest")) and {k: t.get(k) for k in ("cells", "digest")} == {k: o.get(k) for k in ("cells", "digest")}
    if spec["kind"] == "consolidate":
        # Both must leave one fragment (the consolidated one) visible.
        equal = equal and t.get("fragments") == o.get("fragments")
    medians = {s: statistics.median(r["times"]) for s, r in results.items() if "error" not in r}
    nbytes = input_bytes(path)
    if spec["kind"] == "consolidate":
        nbytes = spec["fragments"] * spec["cells_per_fragment"] * 16
    rate = lambda s: fmt_rate(nbytes / medians[s], "B/s") if s in medians else "error"
    ratio = medians["tiledb"] / medians["ours"] if len(medians) == 2 and medians["ours"] > 0 else None
    secs = lambda s: f"{medians[s]:.3f}" if s in medians else "-"
    rss = lambda s: f"{results[s]['peak_rss_kib'] / 1024:.0f}" if s in medians else "-"
    # Median CPU seconds (user + system, every thread) of the timed call.
    cpu = lambda s: (
        f"{statistics.median(results[s]['cpu_times']):.2f}" if s in medians and results[s].get("cpu_times") else "-"
    )
    print(
        f"{name:<26} {nbytes / 1e6:>9.1f} | {rate('tiledb'):>11} {rate('ours'):>11} "
        f"{(format(ratio, '.2f') + 'x' if ratio else '-'):>11} | {secs('tiledb'):>15} {secs('ours'):>7} | "
        f"{cpu('tiledb'):>12} {cpu('ours'):>6} | {rss('tiledb'):>19} {rss('ours'):>6} | "
        + ("yes" if equal else f"NO: TileDB {t}, ours {o}"),
        flush=True,
    )
    for side, r in list(results.items()) + list(cells.items()):
        if "error" in r:
            print(f"    {side}: {r['error']}", flush=True)
    if not equal or len(medians) != 2:
        failures.append(name)
    rows.append(dict(workload=name, tiledb=results["tiledb"], ours=results["ours"], ratio=ratio, cells_equal=equal))
