#!/usr/bin/env python3
# Generator of the directory-hierarchy corpus: runtime/tests/data/hierarchy/.
#
# Producer, pinned: tiledb==0.36.1 (TileDB 2.30.0, format version 22).
# Run from the repository root:
#     /path/to/venv/bin/python conformance/scripts/hierarchy_arrays.py
#
# It writes tiny arrays (a handful of cells each; only the folder structure
# matters) through fragments, deletes, consolidation of fragments, commits,
# fragment metadata and array metadata, vacuuming, and schema evolution, and
# records in oracle.json what TileDB itself reports for each array:
#   * "fragment_info": tiledb.FragmentInfoList (always the range [0, now]):
#     fragment paths, timestamp ranges, schema names, and its to_vacuum list;
#   * "opens": for each open range, the fragments an opened-for-read array
#     holds. TileDB has no direct call for that, so it is taken from a
#     consolidation plan with a desired fragment size of 1 byte: every node
#     is kept (overlapping fragments merge into one node, lone ones are kept
#     because they are larger than 1.5 bytes), so the union of the nodes'
#     URIs is exactly the opened array's fragment list;
#   * "nattr": the attribute count of the schema the open picked.
#
# Timestamps are small fixed integers so the output does not depend on the
# clock; only the random labels change from one run to the next.

import json
import os
import shutil
import sys
import tempfile

import numpy as np
import tiledb

EXPECTED_TILEDB_PY = "0.36.1"
OUT = os.path.join("runtime", "tests", "data", "hierarchy")
# An open end later than every timestamp used here, far below "now".
LATE = 1000


def schema(sparse, attrs=("a",)):
    dim = tiledb.Dim(name="d", domain=(1, 4), tile=4, dtype=np.int32)
    return tiledb.ArraySchema(
        domain=tiledb.Domain(dim),
        sparse=sparse,
        attrs=[tiledb.Attr(name=a, dtype=np.int32) for a in attrs],
        capacity=4 if sparse else 10000,
    )


def write(uri, t, sparse, value, attrs=("a",)):
    with tiledb.open(uri, "w", timestamp=t) as arr:
        data = {a: np.full(4, value, dtype=np.int32) for a in attrs}
        if len(attrs) == 1:
            data = data[attrs[0]]
        if sparse:
            arr[np.arange(1, 5, dtype=np.int32)] = data
        else:
            arr[1:5] = data


def consolidate(uri, mode, start=None, end=None):
    cfg = {"sm.consolidation.mode": mode}
    if start is not None:
        cfg["sm.consolidation.timestamp_start"] = str(start)
        cfg["sm.consolidation.timestamp_end"] = str(end)
    tiledb.consolidate(uri, config=tiledb.Config(cfg))


def vacuum(uri, mode):
    tiledb.vacuum(uri, config=tiledb.Config({"sm.vacuum.mode": mode}))


def relative(array_uri, uri):
    base = os.path.abspath(array_uri)
    path = uri[len("file://"):] if uri.startswith("file://") else uri
    return os.path.relpath(path, base)


def opened_fragments(uri, start, end):
    with tiledb.open(uri, timestamp=(start, end)) as arr:
        plan = tiledb.ConsolidationPlan(tiledb.default_ctx(), arr, 1)
        names = []
        for node in json.loads(plan.dump())["nodes"]:
            names.extend(entry["uri"].rstrip("/").split("/")[-1] for entry in node["uris"])
        return sorted(set(names)), arr.schema.nattr


def record(uri, ranges):
    info = tiledb.FragmentInfoList(uri)
    fragments = []
    for i in range(len(info)):
        f = info[i]
        fragments.append(
            {
                "path": relative(uri, f.uri),
                "timestamp_range": list(f.timestamp_range),
                "schema": f.array_schema_name,
                "version": f.version,
            }
        )
    opens = []
    for start, end in ranges:
        names, nattr = opened_fragments(uri, start, end)
        opens.append({"range": [start, end], "fragments": names, "nattr": nattr})
    schema_dir = os.path.join(uri, "__schema")
    return {
        "sparse": tiledb.ArraySchema.load(uri).sparse,
        "schema_files": sorted(
            n for n in os.listdir(schema_dir) if os.path.isfile(os.path.join(schema_dir, n))
        ),
        "fragment_info": fragments,
        "to_vacuum": sorted(relative(uri, u) for u in info.to_vacuum),
        "opens": opens,
    }


def group_config(end):
    return tiledb.Config({"sm.group.timestamp_start": "0", "sm.group.timestamp_end": str(end)})


def make_group(dest):
    # A group whose details change at t = 1, 2, 3 (add, add, remove) and
    # whose metadata is written at t = 2, 3, 4 and then consolidated. Group
    # metadata .vac files hold absolute URIs, so the group is made in a
    # temporary folder (its path, not ours, ends up in the .vac) and copied.
    tmp = tempfile.mkdtemp(prefix="hierarchy-group-")
    uri = os.path.join(tmp, "group_v2")
    tiledb.Group.create(uri)
    for sub in ("sub1", "sub2"):
        tiledb.Group.create(os.path.join(uri, sub))
    with tiledb.Group(uri, "w", config=group_config(1)) as g:
        g.add("sub1", relative=True, name="one")
    with tiledb.Group(uri, "w", config=group_config(2)) as g:
        g.add("sub2", relative=True, name="two")
    with tiledb.Group(uri, "w", config=group_config(3)) as g:
        g.remove("one")
    for t in (2, 3, 4):
        with tiledb.Group(uri, "w", config=group_config(t)) as g:
            g.meta["k"] = t
    tiledb.Group.consolidate_metadata(uri, config=group_config(LATE))
    opens = []
    for end in (0, 1, 2, 3, LATE):
        with tiledb.Group(uri, "r", config=group_config(end)) as g:
            opens.append(
                {
                    "range": [0, end],
                    "members": sorted(m.name for m in g),
                    "k": int(g.meta["k"]) if "k" in g.meta else None,
                }
            )
    shutil.copytree(uri, dest)
    shutil.rmtree(tmp)
    return {"opens": opens}


def main():
    if tiledb.__version__ != EXPECTED_TILEDB_PY:
        sys.exit(f"need tiledb=={EXPECTED_TILEDB_PY}, found {tiledb.__version__}")
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    oracle = {
        "producer": f"tiledb-py {tiledb.__version__}, TileDB {'.'.join(map(str, tiledb.libtiledb.version()))}",
        "arrays": {},
    }

    # Plain fragments and time travel.
    uri = os.path.join(OUT, "dense_time_travel")
    tiledb.Array.create(uri, schema(False))
    for t in (1, 2, 3):
        write(uri, t, False, t)
    oracle["arrays"]["dense_time_travel"] = record(
        uri, [(0, LATE), (0, 1), (0, 2), (2, 3), (2, 2), (4, LATE)]
    )

    # Fragment consolidation of [1, 3] out of four fragments, not vacuumed:
    # dense and sparse differ when the open range cuts the consolidated one.
    for sparse in (False, True):
        name = "sparse_consolidated" if sparse else "dense_consolidated"
        uri = os.path.join(OUT, name)
        tiledb.Array.create(uri, schema(sparse))
        for t in (1, 2, 3, 4):
            write(uri, t, sparse, t)
        consolidate(uri, "fragments", 1, 3)
        oracle["arrays"][name] = record(
            uri, [(0, LATE), (0, 2), (0, 3), (2, 4), (3, 4), (4, 4), (2, 2)]
        )

    # Deletes and commit consolidation: a .con holding .wrt lines and a .del
    # with its tile, then one more fragment committed on its own.
    uri = os.path.join(OUT, "sparse_commits")
    tiledb.Array.create(uri, schema(True))
    write(uri, 1, True, 1)
    write(uri, 2, True, 2)
    with tiledb.open(uri, "d", timestamp=3) as arr:
        arr.query(cond="a == 2").submit()
    write(uri, 4, True, 4)
    consolidate(uri, "commits")
    write(uri, 5, True, 5)
    oracle["arrays"]["sparse_commits"] = record(uri, [(0, LATE), (0, 3), (3, 5), (2, 4)])

    # Commits consolidated, then fragments consolidated and vacuumed: the
    # vacuumed fragments' commits sit in the .con, so vacuuming writes a .ign.
    uri = os.path.join(OUT, "vacuumed_with_ignore")
    tiledb.Array.create(uri, schema(True))
    for t in (1, 2, 3):
        write(uri, t, True, t)
    consolidate(uri, "commits")
    consolidate(uri, "fragments")
    vacuum(uri, "fragments")
    write(uri, 4, True, 4)
    oracle["arrays"]["vacuumed_with_ignore"] = record(uri, [(0, LATE), (0, 2), (4, 4)])

    # Consolidated fragment metadata.
    uri = os.path.join(OUT, "fragment_meta")
    tiledb.Array.create(uri, schema(False))
    write(uri, 1, False, 1)
    write(uri, 2, False, 2)
    consolidate(uri, "fragment_meta")
    oracle["arrays"]["fragment_meta"] = record(uri, [(0, LATE), (0, 1)])

    # Array metadata written three times and consolidated.
    uri = os.path.join(OUT, "array_metadata")
    tiledb.Array.create(uri, schema(False))
    write(uri, 1, False, 1)
    for t in (2, 3, 4):
        with tiledb.open(uri, "w", timestamp=t) as arr:
            arr.meta["k"] = t
    consolidate(uri, "array_meta")
    entry = record(uri, [(0, LATE)])
    entry["metadata"] = []
    for start, end in [(0, LATE), (0, 3), (3, 4), (0, 1)]:
        with tiledb.open(uri, timestamp=(start, end)) as arr:
            k = arr.meta.get("k")
            entry["metadata"].append({"range": [start, end], "k": None if k is None else int(k)})
    oracle["arrays"]["array_metadata"] = entry

    # Schema evolution: an attribute added at t = 2.
    uri = os.path.join(OUT, "schema_evolution")
    tiledb.Array.create(uri, schema(True))
    write(uri, 1, True, 1)
    evolution = tiledb.ArraySchemaEvolution()
    evolution.add_attribute(tiledb.Attr(name="b", dtype=np.int32))
    evolution.timestamp(2)
    evolution.array_evolve(uri)
    write(uri, 3, True, 3, attrs=("a", "b"))
    oracle["arrays"]["schema_evolution"] = record(uri, [(0, LATE), (0, 1), (0, 2), (2, 3)])

    # Two evolutions, at t = 5 (adds b) and t = 10 (adds c). Schema names
    # are chosen in name order, not by timestamp: "__10_10_…" sorts before
    # "__5_5_…" and before the creation schema named by the wall clock.
    uri = os.path.join(OUT, "schema_name_order")
    tiledb.Array.create(uri, schema(True))
    for t, attr in ((5, "b"), (10, "c")):
        evolution = tiledb.ArraySchemaEvolution()
        evolution.add_attribute(tiledb.Attr(name=attr, dtype=np.int32))
        evolution.timestamp(t)
        evolution.array_evolve(uri)
    oracle["arrays"]["schema_name_order"] = record(
        uri, [(0, 4), (0, 5), (0, 9), (0, 10), (0, 20), (0, LATE)]
    )

    oracle["groups"] = {"group_v2": make_group(os.path.join(OUT, "group_v2"))}

    with open(os.path.join(OUT, "oracle.json"), "w") as f:
        json.dump(oracle, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
