#!/usr/bin/env python3
"""Test double: the tiledb-py adapter with one value of every cell read changed.

    python flip_one_value.py [--case ID] info | write … | read … | serve

It answers as `flip-one-value`. With `--case ID` it changes only that case's reads. The value
changed is the last value of the first row, so that a runner comparing results must report a
failure with a diff; errors pass through untouched.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "adapters"))

import tiledb_py_adapter as real  # noqa: E402


def flip(value):
    """The same JSON value with one scalar changed."""
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        if value.startswith("0x"):
            return value[:-1] + ("0" if value[-1] != "0" else "1")
        if value.lstrip("-").isdigit():
            return str(int(value) + 1)
        return (value[:-1] + ("0" if value[-1] != "0" else "1")) if value else "00"
    if isinstance(value, list) and value:
        return [flip(value[0])] + value[1:]
    return value


def alter(answer, case_file, only_case):
    if only_case and os.path.basename(case_file or "") != only_case + ".toml":
        return answer
    cells = answer.get("cells") if isinstance(answer, dict) else None
    if cells:
        row = cells[0]
        row[-1] = flip(row[-1])
    return answer


def main():
    args = sys.argv[1:]
    only_case = None
    if args[:1] == ["--case"]:
        only_case, args = args[1], args[2:]
    if args == ["serve"]:
        for line in sys.stdin:
            if not line.strip():
                continue
            req = json.loads(line)
            try:
                answer = real.handle_request(req)
                if req.get("op") == "info":
                    answer["name"] = "flip-one-value"
                answer = alter(answer, req.get("case_file"), only_case)
            except Exception as e:
                answer = {"error": real.classify(e), "message": str(e)}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
        return 0
    try:
        answer = real.dispatch(args)
    except Exception as e:
        print(json.dumps({"error": real.classify(e), "message": str(e)}))
        return 1
    if args[:1] == ["info"]:
        answer["name"] = "flip-one-value"
    if args[:1] == ["read"] and len(args) == 4:
        answer = alter(answer, args[2], only_case)
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
