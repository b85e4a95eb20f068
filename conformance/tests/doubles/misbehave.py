#!/usr/bin/env python3
"""Test double: the tiledb-py adapter, except on the reads of one case, where it dies or hangs.

    python misbehave.py (--crash-on ID | --crash-when-used-on ID | --hang-on ID |
        --empty-write-on ID) [--no-serve] info | write … | read … | serve

It answers as `misbehave`. `--crash-on ID` exits abruptly (status 3, nothing printed) when
asked to read case ID; `--crash-when-used-on ID` aborts (SIGABRT) on such a read only in a
`serve` process that has answered a request before, as a process whose heap an earlier
request damaged would; `--hang-on ID` sleeps far past any time limit instead;
`--empty-write-on ID` claims to have replayed case ID but writes nothing. `--no-serve`
refuses the `serve` command, so that the runner falls back to one process per request.
Every other request is answered by the real adapter, so a runner that survives the
misbehaviour goes on to pass the other cases.
"""

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "adapters"))

import tiledb_py_adapter as real  # noqa: E402


def misbehave_if_asked(mode, case_id, op, case_file):
    """Misbehave as `mode` says when `op` on `case_file` is the one named; returns an answer to
    give instead of the real adapter's, if any."""
    if os.path.basename(case_file or "") != case_id + ".toml":
        return None
    if mode == "--empty-write-on":
        return {"ok": True} if op == "write" else None
    if op != "read" or mode == "--crash-when-used-on":
        return None
    if mode == "--crash-on":
        sys.stderr.write("misbehave: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    time.sleep(3600)


def main():
    args = sys.argv[1:]
    mode, case_id, args = args[0], args[1], args[2:]
    serve_allowed = True
    if args[:1] == ["--no-serve"]:
        serve_allowed, args = False, args[1:]
    if args == ["serve"]:
        if not serve_allowed:
            print(json.dumps({"error": "usage", "message": "no serve mode"}))
            return 1
        answered = 0
        for line in sys.stdin:
            if not line.strip():
                continue
            req = json.loads(line)
            used = answered > 0 and req.get("op") == "read"
            if mode == "--crash-when-used-on" and used and os.path.basename(req.get("case_file") or "") == case_id + ".toml":
                sys.stderr.write("misbehave: aborting in a used process on purpose\n")
                sys.stderr.flush()
                os.abort()
            if req.get("op") != "info":
                answered += 1
            fake = misbehave_if_asked(mode, case_id, req.get("op"), req.get("case_file"))
            try:
                answer = fake if fake is not None else real.handle_request(req)
                if req.get("op") == "info":
                    answer["name"] = "misbehave"
            except Exception as e:
                answer = {"error": real.classify(e), "message": str(e)}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
        return 0
    if args[:1] == ["read"] and len(args) == 4:
        misbehave_if_asked(mode, case_id, "read", args[2])
    if args[:1] == ["write"] and len(args) == 3:
        fake = misbehave_if_asked(mode, case_id, "write", args[1])
        if fake is not None:
            print(json.dumps(fake))
            return 0
    try:
        answer = real.dispatch(args)
    except Exception as e:
        print(json.dumps({"error": real.classify(e), "message": str(e)}))
        return 1
    if args[:1] == ["info"]:
        answer["name"] = "misbehave"
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
