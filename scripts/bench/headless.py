"""Row 5: the headless terminal against stock pyte, @xterm/headless and the pure-Python floor."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyte

from bench.common import (
    CHUNK,
    NODE_FEED,
    ROOT,
    Report,
    Sizes,
    mb_s,
    progress,
)
from ptyvisor.terminal import HeadlessTerminal
from ptyvisor.terminal.parser import SEQUENCE, TEXT
from ptyvisor.terminal.signals import CONTROLS

# --------------------------------------------------------------------------- row 5


def tui_stream(size: int, cols: int, rows: int) -> bytes:
    """A full-screen program at work: a full redraw now and then, otherwise a few rows
    rewritten in place (cursor moves, SGR from a fixed theme of 256-colour and truecolor
    values, bold, reverse, erase to the end of line), framed by box drawing, with a
    spinner and some wide characters, and a status line."""
    rng = random.Random(5)
    theme = [f"38;5;{rng.randrange(256)}" for _ in range(6)]
    theme += [
        f"38;2;{rng.randrange(256)};{rng.randrange(256)};{rng.randrange(256)}" for _ in range(6)
    ]
    theme += ["1", "2", "7", "1;32", "31", "48;5;236"]
    words = "def return await async self session output client screen 42 None if else for in"
    symbols = ["\u2713", "\u2717", "\u2192", "\u2026", "\u754c\u9762", "\u2500" * 6]
    spinner = "\u280b\u2819\u2839\u2838\u283c\u2834\u2826\u2827\u2807\u280f"
    parts: list[bytes] = []
    total = frame = 0
    while total < size:
        out = ["\x1b[?25l"]
        if frame % 40 == 0:
            out.append("\x1b[H\x1b[2J\u256d" + "\u2500" * (cols - 2) + "\u256e")
            targets: Sequence[int] = range(2, rows - 1)
        else:
            targets = rng.sample(range(2, rows - 1), rng.randint(1, 6))
        for row in targets:
            out.append(f"\x1b[{row};1H\u2502 \x1b[{row};{rng.randint(3, cols // 3)}H")
            for _ in range(rng.randint(1, 4)):
                text = " ".join(
                    rng.choice(symbols) if rng.random() < 0.15 else rng.choice(words.split())
                    for _ in range(rng.randint(1, 5))
                )
                out.append(f"\x1b[{rng.choice(theme)}m{text}\x1b[0m ")
            out.append(f"\x1b[K\x1b[{row};{cols}H\u2502")
        out.append(
            f"\x1b[{rows};1H\x1b[7m {spinner[frame % len(spinner)]} frame {frame:6d} "
            "\x1b[0m\x1b[K\x1b[?25h"
        )
        chunk = "".join(out).encode()
        parts.append(chunk)
        total += len(chunk)
        frame += 1
    return b"".join(parts)[:size]


CAPTURED = ROOT / "tests" / "terminal" / "captured"


def captured_stream(size: int) -> bytes | None:
    """Real programs' output (tests/terminal/captured/*.input: vim, less), repeated to ``size``."""
    files = sorted(CAPTURED.glob("*.input"))
    if not files:
        return None
    blob = b"".join(file.read_bytes() for file in files)
    return (blob * (size // len(blob) + 1))[:size]


def feed_rate(feed: Callable[[bytes], object], data: bytes) -> float:
    """Bytes/s ``feed`` takes ``data`` at, in CHUNK pieces."""
    started = time.perf_counter()
    for offset in range(0, len(data), CHUNK):
        feed(data[offset : offset + CHUNK])
    return len(data) / (time.perf_counter() - started)


TOKEN_PATTERN = re.compile(f"{TEXT.pattern}|{SEQUENCE.pattern}|{CONTROLS.pattern}")


def floor_rate(data: bytes) -> float:
    """Bytes/s of the least any pure-Python terminal does per token: the parser's own
    regular expressions find each printable run, escape sequence or control, and one
    (empty) Python call is made for it. No screen is touched; this bounds what a
    faster screen representation could reach."""

    def handle(kind: int | None) -> None:
        pass

    text = data.decode("utf-8", "replace")
    started = time.perf_counter()
    for token in TOKEN_PATTERN.finditer(text):
        handle(token.lastindex)
    return len(data) / (time.perf_counter() - started)


def install_xterm() -> Path | str:
    """The node_modules folder that holds @xterm/headless, or why there is none."""
    if shutil.which("node") is None:
        return "node is not on PATH"
    script = ROOT / "scripts" / "install_xterm_headless.sh"
    try:
        done = subprocess.run(
            ["bash", str(script)], capture_output=True, text=True, timeout=900, check=False
        )
    except subprocess.TimeoutExpired:
        return "install_xterm_headless.sh took over 15 minutes"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"install_xterm_headless.sh failed: {said}"
    return Path(done.stdout.strip().splitlines()[-1]).parent


def xterm_rate(modules: Path, data: bytes, cols: int, rows: int) -> float:
    with tempfile.NamedTemporaryFile(suffix=".bin") as file:
        file.write(data)
        file.flush()
        argv = [str(modules / "@xterm" / "headless"), file.name, str(cols), str(rows), str(CHUNK)]
        done = subprocess.run(
            ["node", "-e", NODE_FEED, *argv],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"node failed: {done.stderr.strip()[-500:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return float(figures["bytes"]) / float(figures["seconds"])


def terminal_rows(sizes: Sizes, log_file: Path, report: Report) -> None:
    size = sizes.terminal_bytes
    with log_file.open("rb") as handle:
        log = handle.read(size)
    streams = [
        ("5a", "real programs' output (captured, repeated)", captured_stream(size), 80, 24),
        ("5b", "TUI-like stream (synthesised)", tui_stream(size, 120, 40), 120, 40),
        ("5c", "log lines (1 in 5 coloured)", log, 120, 40),
    ]
    progress("row 5: installing @xterm/headless")
    modules = install_xterm()
    for key, name, data, cols, rows in streams:
        what = f"headless terminal, {name}, {size / 1e6:.1f} MB at {cols}x{rows}"
        if data is None:
            report.add(key, what, f"not measured: {CAPTURED} holds no .input file", "≥ 0.5")
            continue
        progress(f"row 5: {name}")
        ours = feed_rate(HeadlessTerminal(cols, rows).feed, data)
        floor = floor_rate(data)
        figures: dict[str, Any] = {"bytes": len(data), "ptyvisor": ours, "python_floor": floor}
        try:
            figures["pyte"] = feed_rate(pyte.ByteStream(pyte.Screen(cols, rows)).feed, data)
        except Exception as error:  # stock pyte has faults ptyvisor's terminal fixes
            figures["pyte_error"] = f"{type(error).__name__}: {error}"
            rates = f"ours {mb_s(ours)}, pyte raised {figures['pyte_error']}"
        else:
            rates = f"ours {mb_s(ours)}, pyte {mb_s(figures['pyte'])}"
        if isinstance(modules, str):
            measured, met = f"{rates}; xterm not measured: {modules}", None
        else:
            try:
                xterm = xterm_rate(modules, data, cols, rows)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as failed:
                measured, met = f"{rates}; xterm not measured: {failed}", None
            else:
                figures["xterm"] = xterm
                measured = (
                    f"{ours / xterm:.2f} ({rates}, xterm {mb_s(xterm)}; "
                    f"pure-Python floor {mb_s(floor)} = {floor / xterm:.2f} of xterm)"
                )
                met = ours / xterm >= 0.5
        report.raw[f"{key}_terminal"] = figures
        report.add(key, f"{what}: ptyvisor ÷ @xterm/headless", measured, "≥ 0.5", met)
