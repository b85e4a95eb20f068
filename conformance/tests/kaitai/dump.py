"""Parses TileDB files with the Python parsers that the Kaitai Struct compiler
generated from `tiledb-codegen --emit ksy`, and dumps their field values as JSON
in the shape serde gives the runtime's generated structs (conformance/tests/kaitai.rs
compares the two).

usage: python dump.py PY_DIR MANIFEST JOBS OUT
  PY_DIR    the compiled modules (tiledb_<kind>.py)
  MANIFEST  manifest.json of --emit ksy: per Kaitai type, its fields' attributes and kinds
  JOBS      JSON list of {"kind": "array_schema", "path": "..."}
  OUT       JSON list of {"kind", "path", and "value" or "filtered" or "error"}
"""

import importlib
import json
import sys
import traceback


def main():
    py_dir, manifest_path, jobs_path, out_path = sys.argv[1:5]
    sys.path.insert(0, py_dir)
    with open(manifest_path) as f:
        types = json.load(f)["types"]
    by_struct = {entry["struct"]: name for name, entry in types.items()}
    with open(jobs_path) as f:
        jobs = json.load(f)

    def value(v, m):
        if v is None:
            return None
        kind = m["kind"]
        if kind == "int":
            return int(v)
        if kind == "float":
            return float(v)
        if kind == "bool":
            return bool(v)
        if kind == "enum":
            return m["names"].get(str(int(v)), int(v))
        if kind == "bytes":
            return list(v)
        if kind == "opaque":
            # Bytes Kaitai cannot lay out (the current domain): not compared.
            return "<opaque>"
        if kind == "struct":
            return dump(v, m["type"])
        if kind == "list":
            return [value(e, m["elem"]) for e in v]
        if kind == "switch":
            struct = m["cases"][type(v).__name__]
            return {struct: dump(v, by_struct[struct])}
        raise ValueError("unknown kind %r" % kind)

    def dump(obj, type_name):
        out = {}
        for field in types[type_name]["fields"]:
            out[field["key"]] = value(getattr(obj, field["attr"], None), field["value"])
        return out

    def filter_names(header):
        return [f.filter_type.name if hasattr(f.filter_type, "name") else str(f.filter_type)
                for f in header.pipeline.filters]

    def generic_tile(kind, path):
        module = importlib.import_module("tiledb_" + kind)
        cls = getattr(module, "Tiledb" + "".join(p.capitalize() for p in kind.split("_")))
        root = cls.from_file(path)
        result = {"header": dump(root.header, "generic_tile_header")}
        payload = None
        # A field whose `if` is false is left unset by the Python target.
        gzip_chunk = getattr(root, "gzip_chunk", None)
        plain_chunk = getattr(root, "plain_chunk", None)
        if gzip_chunk is not None:
            payload = getattr(gzip_chunk, "payload", None)
        elif plain_chunk is not None:
            payload = plain_chunk.payload
        if payload is None:
            return result, "filtered payload: %d chunk(s), pipeline [%s]" % (
                root.n_chunks, ", ".join(filter_names(root.header)))
        result["payload"] = dump(payload, kind)
        return result, None

    def fragment_metadata(path):
        from tiledb_fragment_metadata import TiledbFragmentMetadata
        root = TiledbFragmentMetadata.from_file(path)
        return {
            "footer_len": int(root.footer_len),
            "headers": [dump(t.header, "generic_tile_header") for t in root.tiles.tiles],
            "footer_head": dump(root.footer_head, "fragment_footer_head"),
        }, None

    results = []
    for job in jobs:
        entry = {"kind": job["kind"], "path": job["path"]}
        try:
            if job["kind"] == "fragment_metadata":
                val, filtered = fragment_metadata(job["path"])
            else:
                val, filtered = generic_tile(job["kind"], job["path"])
            entry["value"] = val
            if filtered:
                entry["filtered"] = filtered
        except Exception as e:  # reported per file; the Rust side decides
            entry["error"] = "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc(limit=3))
        results.append(entry)
    with open(out_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
