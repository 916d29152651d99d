#!/usr/bin/env python3
"""Runs every command block of README.md and docs/*.md, as a newcomer would paste it.

A command block is a fenced block whose info string is `sh` and which invokes lagpilot
(`lagpilot ...`, `$B ...` or `build/release/cli/lagpilot ...`). Each one runs whole, as one bash
script with `set -e`, in a scratch directory that looks like the source tree: `examples/`,
`config/` and `scripts/` link to the sources, `build/release/cli/lagpilot` and `lagpilot` (on
PATH) are the binary under test, and `traces/` holds the bundled traces cut to their first
MAX_TRACE_ROWS rows, so that the long ones replay in seconds. `make` is a stand-in that knows
one target: `make run` runs scripts/run-demo.sh on the binary under test (the build is done),
with the replay shortened to DEMO_SECONDS. Blocks run a few at a time (most wait on brokers and
pacing, not on the CPU). A block fails on a non-zero exit, on a time-out, or
when it prints nothing. Background jobs a block starts (`... &`) are killed when it ends.

Other fences are transcripts (`$ lagpilot ...` with their output), usage summaries and data,
and are not run; a `lagpilot sim|tune|run|...` line in one is an error (make the block `sh`).
`lagpilot ctl` needs a running `lagpilot run` and is covered by the CtlCli tests. A block that
cannot run here is marked on the line before its fence with
`<!-- doc-commands: skip: <why> -->`; the reason is printed.

Usage: run_doc_commands.py BINARY SOURCE_DIR [--only FILE]
"""
import concurrent.futures
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

MAX_TRACE_ROWS = 150
DEMO_SECONDS = 10
MAKE_STANDIN = """#!/usr/bin/env bash
if [[ "$*" != run ]]; then echo "doc-commands: make $* is not run here" >&2; exit 1; fi
LAGPILOT_DEMO_SECONDS=%d exec scripts/run-demo.sh build/release/cli/lagpilot
""" % DEMO_SECONDS
BLOCK_TIMEOUT_SECONDS = 150
PARALLEL_BLOCKS = 4
INVOCATION = re.compile(r"^\s*(lagpilot|\$B|build/release/cli/lagpilot|make run)\b", re.M)
LOOSE_COMMAND = re.compile(
    r"^(lagpilot|\$B|build/release/cli/lagpilot)\s+(sim|tune|run|broker|produce|calibrate)\b", re.M)
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
SKIP = re.compile(r"<!--\s*doc-commands:\s*skip:\s*(.*?)\s*-->\s*$")


def blocks(source):
    files = [os.path.join(source, "README.md")] + sorted(glob.glob(os.path.join(source, "docs", "*.md")))
    for path in files:
        text = open(path, encoding="utf-8").read()
        for m in FENCE.finditer(text):
            lang, body = m.group(1), m.group(2)
            line = text.count("\n", 0, m.start()) + 1
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            skip = SKIP.search(before)
            yield os.path.relpath(path, source), line, lang, body, skip.group(1) if skip else None


def make_scratch(binary, source):
    root = tempfile.mkdtemp(prefix="lagpilot-doc-commands-")
    for name in ("examples", "config", "scripts"):
        os.symlink(os.path.join(source, name), os.path.join(root, name))
    os.makedirs(os.path.join(root, "build", "release", "cli"))
    os.symlink(binary, os.path.join(root, "build", "release", "cli", "lagpilot"))
    os.makedirs(os.path.join(root, "bin"))
    os.symlink(binary, os.path.join(root, "bin", "lagpilot"))
    make = os.path.join(root, "bin", "make")
    with open(make, "w", encoding="utf-8") as f:
        f.write(MAKE_STANDIN)
    os.chmod(make, 0o755)
    # Every file under traces/ (subfolders such as traces/eval/ included), cut short.
    traces = os.path.join(source, "traces")
    for folder, _, names in os.walk(traces):
        out_folder = os.path.join(root, "traces", os.path.relpath(folder, traces))
        os.makedirs(out_folder, exist_ok=True)
        for name in names:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as src, open(
                os.path.join(out_folder, name), "w", encoding="utf-8"
            ) as dst:
                for i, row in enumerate(src):
                    if i > MAX_TRACE_ROWS:
                        break
                    dst.write(row)
    return root


def run_block(scratch, where, body):
    workdir = tempfile.mkdtemp(prefix="block-", dir=scratch)
    for name in ("examples", "config", "scripts", "build", "traces"):
        os.symlink(os.path.join(scratch, name), os.path.join(workdir, name))
    script = "set -e\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + body
    env = dict(os.environ, PATH=os.path.join(scratch, "bin") + os.pathsep + os.environ["PATH"])
    started = time.monotonic()
    proc = subprocess.Popen(["bash", "-c", script], cwd=workdir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=BLOCK_TIMEOUT_SECONDS)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        code = "timeout"
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # whatever the block left running
    except ProcessLookupError:
        pass
    text = output.decode("utf-8", "replace")
    ok = code == 0 and text.strip() != ""
    return where, ok, code, time.monotonic() - started, text


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    binary, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    only = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--only" else None
    failures, todo, seen = [], [], set()
    for path, line, lang, body, skip in blocks(source):
        where = f"{path}:{line}"
        if only and path != only:
            continue
        if lang not in ("sh", "bash"):
            if LOOSE_COMMAND.search(body) and not skip:
                failures.append(f"{where}: a lagpilot command outside a ```sh block (not run)")
            continue
        if not INVOCATION.search(body):
            continue
        if skip:
            print(f"SKIP {where}: {skip}")
            continue
        if body in seen:  # the same block in two files runs once
            print(f"SAME {where}: ran above")
            continue
        seen.add(body)
        todo.append((where, body))
    scratch = make_scratch(binary, source)
    started = time.monotonic()
    try:
        with concurrent.futures.ThreadPoolExecutor(PARALLEL_BLOCKS) as pool:
            for where, ok, code, seconds, text in pool.map(lambda t: run_block(scratch, *t), todo):
                print(f"{'PASS' if ok else 'FAIL'} {where} ({seconds:.1f} s)")
                if not ok:
                    failures.append(f"{where}: exit {code}\n{text[-4000:]}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{len(todo)} blocks in {time.monotonic() - started:.1f} s")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
