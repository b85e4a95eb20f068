#!/usr/bin/env python3
"""Check the committed corpus without writing anything.

    python3 conformance/scripts/check_corpus.py            # manifest only (no TileDB needed)
    .venv-tiledb/bin/python conformance/scripts/check_corpus.py --reread
                                                          # also reread every case with TileDB

Manifest check: every file under conformance/corpus/<producer>/ is listed in MANIFEST.json with
its sha256 and nothing listed is missing; every case folder has a case file. Cross check: a case
replayed by two TileDB releases has the same expected results in both corpora. With --reread (needs
tiledb-py of the producer's TileDB release, or a newer one that still reads that format), every
read of expected.json is run again through tiledb-py and must give the same canonical JSON, and
every negative read must still fail. Ends with the line 'N passed, N failed'.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONFORMANCE = os.path.dirname(HERE)
CORPUS = os.path.join(CONFORMANCE, "corpus")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def files_under(root):
    out = []
    for dirpath, _, filenames in os.walk(root):
        for fn in filenames:
            out.append(os.path.relpath(os.path.join(dirpath, fn), root).replace(os.sep, "/"))
    return sorted(out)


def check_manifest(results):
    with open(os.path.join(CORPUS, "MANIFEST.json")) as f:
        manifest = json.load(f)
    for pname, prod in manifest["producers"].items():
        root = os.path.join(CORPUS, pname)
        on_disk = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
        listed = sorted(prod["cases"])
        for cid in sorted(set(on_disk) ^ set(listed)):
            results.append((f"{pname}/{cid}", "case folder and manifest disagree (present in only one)"))
        for cid in listed:
            entry = prod["cases"][cid]
            case_dir = os.path.join(root, cid)
            problems = []
            if not os.path.exists(os.path.join(CONFORMANCE, entry["case_file"])):
                problems.append(f"case file {entry['case_file']} is missing")
            if os.path.isdir(case_dir):
                actual = files_under(case_dir)
                for rel in sorted(set(actual) ^ set(entry["files"])):
                    problems.append(f"file {rel} is {'not in the manifest' if rel in actual else 'missing'}")
                for rel in sorted(set(actual) & set(entry["files"])):
                    if sha256(os.path.join(case_dir, rel)) != entry["files"][rel]:
                        problems.append(f"file {rel} does not match its sha256")
            results.append((f"manifest {pname}/{cid}", "; ".join(problems) if problems else None))
    return manifest


def release_differences():
    """(producer, case, read) -> note, for every release difference declared in a case file: a
    release's tiledb-py that stores other bytes than the recipe says (kind "writer"), or a
    release whose reader answers differently by design (kind "reader")."""
    import tomllib

    out = {}
    cases_dir = os.path.join(CONFORMANCE, "cases")
    for fn in sorted(os.listdir(cases_dir)):
        if fn.endswith(".toml"):
            with open(os.path.join(cases_dir, fn), "rb") as f:
                case = tomllib.load(f)
            for d in case.get("release_differences", []):
                for p in d["producers"]:
                    out[(p, case["id"], d["read"])] = d["note"]
    return out


def cross_check(manifest, results):
    """The same recipe replayed by two TileDB releases must read back the same: compare the
    expected results of every case present in more than one producer's corpus (reads marked
    as a producer's known bug are left out; negative reads compare their error class)."""
    producers = sorted(manifest["producers"])
    differences = release_differences()
    for i, first in enumerate(producers):
        for second in producers[i + 1 :]:
            common = sorted(set(manifest["producers"][first]["cases"]) & set(manifest["producers"][second]["cases"]))
            for cid in common:
                reads = []
                for p in (first, second):
                    with open(os.path.join(CORPUS, p, cid, "expected.json")) as f:
                        reads.append({r["id"]: r for r in json.load(f)["reads"]})
                for rid in sorted(set(reads[0]) | set(reads[1])):
                    name = f"cross {first}~{second}/{cid}/{rid}"
                    a, b = reads[0].get(rid), reads[1].get(rid)
                    if a is None or b is None:
                        results.append((name, "read present in only one corpus"))
                        continue
                    if "skip" in a or "skip" in b or (first, cid, rid) in differences or (second, cid, rid) in differences:
                        results.append((name, "SKIP"))
                        continue
                    strip = lambda r: {k: v for k, v in r.items() if k not in ("id", "oracle_message")}
                    results.append((name, None if same(strip(a), strip(b)) else "the two releases read differently"))


def reread(manifest, results, only_producer):
    sys.path.insert(0, HERE)
    import tdbcase  # needs tiledb-py

    cases = {c["id"]: c for c in tdbcase.load_cases()}
    for pname, prod in manifest["producers"].items():
        if only_producer and pname != only_producer:
            continue
        for cid in prod["cases"]:
            case_dir = os.path.join(CORPUS, pname, cid)
            with open(os.path.join(case_dir, "expected.json")) as f:
                expected = json.load(f)
            case = cases.get(cid)
            if case is None:
                results.append((f"reread {pname}/{cid}", "no case file"))
                continue
            reads = {r["id"]: r for r in case.get("reads", [])}
            for exp in expected["reads"]:
                name = f"reread {pname}/{cid}/{exp['id']}"
                if "skip" in exp:
                    results.append((name, "SKIP"))
                    continue
                read = reads.get(exp["id"])
                if read is None:
                    results.append((name, "read not in the case file"))
                    continue
                try:
                    got = tdbcase.run_read(case_dir, case, read)
                except Exception as e:  # TileDB refused the array
                    if "error" in exp:
                        results.append((name, None))
                    else:
                        results.append((name, f"TileDB failed: {e}"))
                    continue
                if "error" in exp:
                    results.append((name, "TileDB read an array that should fail"))
                    continue
                want = {k: v for k, v in exp.items() if k != "id"}
                if not same(want, got):
                    results.append((name, "TileDB's read differs from expected.json"))
                else:
                    results.append((name, None))


def replay(manifest, results, producer):
    """Replay every case into a scratch folder with the installed TileDB and compare its reads
    with the committed expected results: the recipes alone must reproduce the corpus."""
    import shutil
    import tempfile

    sys.path.insert(0, HERE)
    import tdbcase

    cases = {c["id"]: c for c in tdbcase.load_cases()}
    prod = manifest["producers"][producer]
    for cid in prod["cases"]:
        case = cases.get(cid)
        if case is None or "base" in case:
            continue
        with open(os.path.join(CORPUS, producer, cid, "expected.json")) as f:
            expected = json.load(f)
        tmp = tempfile.mkdtemp(prefix="tdb-replay-")
        try:
            tdbcase.replay(json.loads(json.dumps(case)), tmp)
            reads = {r["id"]: r for r in case.get("reads", [])}
            for exp in expected["reads"]:
                name = f"replay {producer}/{cid}/{exp['id']}"
                if "skip" in exp:
                    results.append((name, "SKIP"))
                    continue
                got = tdbcase.run_read(tmp, case, reads[exp["id"]])
                want = {k: v for k, v in exp.items() if k != "id"}
                results.append((name, None if same(want, got) else "replayed case reads differently"))
        except Exception as e:
            results.append((f"replay {producer}/{cid}", f"{type(e).__name__}: {e}"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def same(want, got):
    want = json.loads(json.dumps(want))
    got = json.loads(json.dumps(got))
    if "cells" in want and not want.get("ordered", True):
        want["cells"] = sorted(want["cells"], key=json.dumps)
        got["cells"] = sorted(got.get("cells", []), key=json.dumps)
    return want == got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reread", action="store_true", help="reread every case with tiledb-py")
    ap.add_argument("--producer", help="reread only this producer's corpus (e.g. tiledb-2.30)")
    ap.add_argument("--replay", action="store_true", help="replay every case of --producer and compare")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    results = []
    manifest = check_manifest(results)
    cross_check(manifest, results)
    if args.reread:
        reread(manifest, results, args.producer)
    if args.replay:
        replay(manifest, results, args.producer or "tiledb-2.30")
    skipped = [(n, p) for n, p in results if p == "SKIP"]
    failed = [(n, p) for n, p in results if p and p != "SKIP"]
    for n, p in results:
        if p == "SKIP":
            if args.verbose:
                print(f"skip {n}: marked as a known bug of its producer")
        elif p or args.verbose:
            print(f"{'FAIL' if p else 'ok  '} {n}{': ' + p if p else ''}")
    passed = len(results) - len(failed) - len(skipped)
    print(f"corpus: {passed} passed, {len(failed)} failed" + (f", {len(skipped)} skipped" if skipped else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
