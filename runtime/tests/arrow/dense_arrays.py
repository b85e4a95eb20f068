"""Dense arrays for runtime/tests/read_dense_coordinates.rs, written by tiledb-py.

    .venv-tiledb/bin/python runtime/tests/arrow/dense_arrays.py OUT_DIR

Writes under OUT_DIR arrays of several tiles each, whose domains end in
partial tiles, in every tile and cell order, with one to three dimensions of
several integer widths (negative coordinates too), and fragments that cover
part of the domain (the rest is fill). Prints their names, one a line.
"""

import os
import sys

import numpy as np
import tiledb


def create(path, dims, attrs, tile_order="row-major", cell_order="row-major"):
    schema = tiledb.ArraySchema(
        domain=tiledb.Domain(*dims),
        attrs=attrs,
        sparse=False,
        tile_order=tile_order,
        cell_order=cell_order,
    )
    tiledb.Array.create(path, schema)


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(18)
    names = []

    # Two dimensions, negative coordinates, partial tiles on both.
    path = os.path.join(out, "rows_int16")
    create(
        path,
        [
            tiledb.Dim("r", domain=(0, 20), tile=8, dtype=np.int16),
            tiledb.Dim("c", domain=(-3, 10), tile=5, dtype=np.int16),
        ],
        [tiledb.Attr("a", dtype=np.int32)],
    )
    with tiledb.open(path, "w") as A:
        A[:] = rng.integers(-1000, 1000, size=(21, 14), dtype=np.int32)
    with tiledb.open(path, "w") as A:
        A[2:15, 1:5] = rng.integers(-1000, 1000, size=(13, 4), dtype=np.int32)
    names.append("rows_int16")

    # Column-major tiles and cells, 64-bit coordinates, a float attribute,
    # one fragment over part of the domain (the rest is fill).
    path = os.path.join(out, "cols_int64")
    create(
        path,
        [
            tiledb.Dim("x", domain=(5, 40), tile=6, dtype=np.int64),
            tiledb.Dim("y", domain=(0, 22), tile=4, dtype=np.int64),
        ],
        [tiledb.Attr("f", dtype=np.float64)],
        tile_order="col-major",
        cell_order="col-major",
    )
    with tiledb.open(path, "w") as A:
        A[7:30, 3:20] = rng.normal(size=(23, 17))
    names.append("cols_int64")

    # Three dimensions of one byte, row-major tiles of column-major cells.
    path = os.path.join(out, "cube_uint8")
    create(
        path,
        [
            tiledb.Dim("x", domain=(0, 16), tile=5, dtype=np.uint8),
            tiledb.Dim("y", domain=(0, 9), tile=4, dtype=np.uint8),
            tiledb.Dim("z", domain=(0, 12), tile=3, dtype=np.uint8),
        ],
        [tiledb.Attr("v", dtype=np.int64)],
        tile_order="row-major",
        cell_order="col-major",
    )
    with tiledb.open(path, "w") as A:
        A[:] = rng.integers(0, 1 << 40, size=(17, 10, 13), dtype=np.int64)
    names.append("cube_uint8")

    # One dimension of 32-bit coordinates, a partial last tile.
    path = os.path.join(out, "line_uint32")
    create(
        path,
        [tiledb.Dim("i", domain=(0, 4999), tile=640, dtype=np.uint32)],
        [tiledb.Attr("a", dtype=np.uint16)],
    )
    with tiledb.open(path, "w") as A:
        A[:] = rng.integers(0, 60000, size=5000, dtype=np.uint16)
    names.append("line_uint32")

    for name in names:
        print(name)


if __name__ == "__main__":
    main()
