"""Start-up time: what a Claude Code hook and the command line pay before doing any work.

    python bench/startup.py
    python bench/startup.py --runs 15 --reference

A hook runs as a new process on every event, so its start-up is paid each time; the Anthropic SDK
and Instructor alone take seconds of CPU to import, which a ``SessionStart`` that only prints a
saved header must not pay. Each command below is started ``--runs`` times (after one warm-up run
that is not counted) as a fresh process of this interpreter, and timed from outside: wall seconds
by a monotonic clock around the child, CPU seconds (user + system) from the operating system's
accounting of the finished child (``os.wait4``). The table gives min and median of each.

* ``import progsum``: ``python -c "import progsum"``;
* ``hook SessionStart``: ``python -m progsum.integrations.claude_code`` on a ``SessionStart``
  (source ``compact``) event for the small fixture transcript ``tests/fixtures/bench/claude_code/
  invoice-fix.jsonl``, copied to a temporary folder, whose state a ``PreCompact`` run (extractive,
  not timed) saved first; with a dummy ``ANTHROPIC_API_KEY``, so the automatic summarizer choice
  would be Claude: the header is printed without building it;
* ``progsum --version``: the console script (``python -m progsum`` when it is not on PATH);
* with ``--reference``: ``python -c "pass"`` (the interpreter alone) and ``python -c "import
  anthropic, instructor"`` (what the hook no longer pays).

Every timed run must exit 0, and the hook's output must carry the saved header, else the script
stops. Nothing here touches the network.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "bench" / "claude_code" / "invoice-fix.jsonl"
DUMMY_KEY = "sk-ant-bench-not-a-key"
"""Set for the hook so that its automatic choice would be Claude; no request is ever sent."""


@dataclass(frozen=True, kw_only=True)
class Command:
    """One command to time: its argv, its standard input, and what its output must contain."""

    name: str
    argv: list[str]
    stdin: str = ""
    expect: str = ""


@dataclass(frozen=True, kw_only=True)
class Timing:
    """The wall and CPU seconds of each run of one command."""

    name: str
    wall: list[float]
    cpu: list[float]


def run_once(command: Command, env: dict[str, str]) -> tuple[float, float]:
    """Start the command once; its wall and CPU seconds.

    Raises:
        SystemExit: it failed, or its output lacks what it must print.
    """
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out:
        stdin.write(command.stdin.encode())
        stdin.seek(0)
        start = time.monotonic()
        child = subprocess.Popen(  # noqa: S603 - our own interpreter and commands
            command.argv, stdin=stdin, stdout=out, stderr=subprocess.STDOUT, env=env
        )
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        printed = out.read().decode(errors="replace")
    if child.returncode != 0 or command.expect not in printed:
        raise SystemExit(f"{command.name}: exit {child.returncode}, output:\n{printed[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def measure(command: Command, env: dict[str, str], runs: int) -> Timing:
    """One warm-up run, then ``runs`` timed runs of the command."""
    run_once(command, env)
    times = [run_once(command, env) for _ in range(runs)]
    return Timing(name=command.name, wall=[w for w, _ in times], cpu=[c for _, c in times])


def session_start(folder: Path, env: dict[str, str]) -> Command:
    """The hook's SessionStart on a copy of the fixture, after a PreCompact saved its state."""
    transcript = folder / FIXTURE.name
    shutil.copyfile(FIXTURE, transcript)
    hook = [sys.executable, "-m", "progsum.integrations.claude_code"]
    precompact = {"hook_event_name": "PreCompact", "transcript_path": str(transcript)}
    run_once(
        Command(
            name="PreCompact",
            argv=[*hook, "--summarizer", "extractive"],
            stdin=json.dumps(precompact),
        ),
        env,
    )
    saved = json.loads((folder / (FIXTURE.name + ".progsum.json")).read_text(encoding="utf-8"))
    header = str(saved["header"])
    if not header:
        raise SystemExit(f"PreCompact saved no header for {FIXTURE}")
    event = {
        "hook_event_name": "SessionStart",
        "source": "compact",
        "transcript_path": str(transcript),
    }
    return Command(
        name="hook SessionStart",
        argv=hook,
        stdin=json.dumps(event),
        expect=json.dumps(header.splitlines()[0], ensure_ascii=False)[1:-1],
    )


def commands(folder: Path, env: dict[str, str], *, reference: bool) -> list[Command]:
    """The commands timed, in the order of the table."""
    python = sys.executable
    script = shutil.which("progsum")
    version = [script, "--version"] if script else [python, "-m", "progsum", "--version"]
    found = [
        Command(name="import progsum", argv=[python, "-c", "import progsum"]),
        session_start(folder, env),
        Command(name="progsum --version", argv=version, expect="progsum"),
    ]
    if reference:
        found += [
            Command(name="python (nothing)", argv=[python, "-c", "pass"]),
            Command(
                name="import anthropic, instructor",
                argv=[python, "-c", "import anthropic, instructor"],
            ),
        ]
    return found


def table(timings: Sequence[Timing], runs: int) -> str:
    """The Markdown table: min and median wall and CPU milliseconds per command."""
    lines = [
        f"| command ({runs} runs) | wall min ms | wall median ms | cpu min ms | cpu median ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for t in timings:
        cells = [min(t.wall), statistics.median(t.wall), min(t.cpu), statistics.median(t.cpu)]
        lines.append(f"| {t.name} | " + " | ".join(f"{1000 * c:,.0f}" for c in cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Time the commands and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=9, help="timed runs per command (default 9)")
    parser.add_argument(
        "--reference", action="store_true", help="also time a bare interpreter and the SDKs"
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs {args.runs} must be at least 1; e.g. --runs 9")
    env = dict(os.environ, ANTHROPIC_API_KEY=DUMMY_KEY)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        timings = [
            measure(c, env, args.runs)
            for c in commands(Path(folder), env, reference=args.reference)
        ]
    print(table(timings, args.runs))
    sys.stderr.write(f"startup: {time.monotonic() - started:.1f} s\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
