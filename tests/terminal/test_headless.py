"""HeadlessTerminal as a whole against real programs and a real terminal: vim and less
under a PTY, their snapshots shown in tmux, and captured program output.

The tmux tests show the snapshot in a real terminal and compare what it displays.
``python tests/terminal/test_headless.py --capture`` regenerates
``tests/terminal/captured/`` (raw vim/less output, with tmux as the oracle for the
expected screen text)."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from ptyprocess import PtyProcess

from ptyvisor.terminal import HeadlessTerminal
from tests.timeouts import scaled

from .support import CAPTURED, CSI, ESC, make, round_trip, state, text

# -- real programs, real terminals -----------------------------------------------


def program_env() -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "LESS": "",
        "LESSHISTFILE": "-",
    }


class PtyRun:
    """A program under a real PTY whose output feeds a HeadlessTerminal; the
    terminal's replies go back to the program as a real terminal's would."""

    def __init__(self, argv: list[str], cols: int, rows: int, cwd: Path) -> None:
        self.raw = bytearray()
        self.proc = PtyProcess.spawn(argv, cwd=str(cwd), env=program_env(), dimensions=(rows, cols))
        self.term = HeadlessTerminal(cols, rows, on_reply=self.proc.write)

    def pump(self, until: Callable[[HeadlessTerminal], bool], *, wait: float = 15) -> None:
        """Feed output until ``until`` holds and the program has been quiet a moment."""
        deadline = time.monotonic() + scaled(wait)
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(self.proc.fd, 65536)
                except OSError:  # EIO: the program exited
                    chunk = b""
                if chunk:
                    self.raw += chunk
                    self.term.feed(chunk)
                    quiet_since = time.monotonic()
                    continue
                if until(self.term):
                    return
                break
            if until(self.term) and time.monotonic() - quiet_since > 0.3:
                return
        assert until(self.term), "screen never settled:\n" + "\n".join(text(self.term))

    def close(self) -> None:
        with suppress(Exception):
            self.proc.close(force=True)


@contextmanager
def pty_run(argv: list[str], cols: int, rows: int, cwd: Path) -> Iterator[PtyRun]:
    run = PtyRun(argv, cols, rows, cwd)
    try:
        yield run
    finally:
        run.close()


def require(program: str) -> None:
    """These tests compare against real programs: missing one is a failure, not a skip
    (.ci/run installs them: apt-get install tmux vim less)."""
    assert shutil.which(program) is not None, f"{program} is not installed (see .ci/run)"


@contextmanager
def tmux_showing(data: bytes, cols: int, rows: int, workdir: Path) -> Iterator[Callable[..., str]]:
    """A private tmux server whose only pane has ``cat``-ed ``data``; yields ``tmux(*args)``."""
    require("tmux")
    conf = workdir / "tmux.conf"
    conf.write_text("set -g status off\nset -g history-limit 10000\n")
    payload = workdir / f"shown-{uuid.uuid4().hex}.ansi"
    payload.write_bytes(data)
    socket = f"ptyvisor-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in program_env().items() if k != "LESS"}
    base = ["tmux", "-u", "-L", socket, "-f", str(conf)]

    def tmux(*args: str) -> str:
        done = subprocess.run(
            [*base, *args], env=env, capture_output=True, text=True, check=True, timeout=10
        )
        return done.stdout

    shell = f"stty raw -echo; cat {payload}; exec sleep 120"
    tmux("new-session", "-d", "-x", str(cols), "-y", str(rows), shell)
    socket_path = Path(tmux("display-message", "-p", "#{socket_path}").strip())
    try:
        yield tmux
    finally:
        subprocess.run([*base, "kill-server"], env=env, capture_output=True, check=False)
        socket_path.unlink(missing_ok=True)  # tmux leaves its socket file behind


def pane_rows(tmux: Callable[..., str], rows: int, expected: list[str]) -> list[str]:
    """The pane's text rows (rstripped), polled until they match or time runs out."""
    deadline = time.monotonic() + scaled(10)
    while True:
        shown = [r.rstrip() for r in tmux("capture-pane", "-p").split("\n")][:rows]
        shown += [""] * (rows - len(shown))
        if shown == expected or time.monotonic() > deadline:
            return shown
        time.sleep(0.05)


def assert_tmux_shows(term: HeadlessTerminal, workdir: Path) -> None:
    """A real terminal (tmux) shows the snapshot as the headless screen has it."""
    snap = term.snapshot()
    expected = text(term)
    with tmux_showing(snap.ansi.encode(), term.cols, term.rows, workdir) as tmux:
        assert pane_rows(tmux, term.rows, expected) == expected
        # tmux reports a pending wrap as x == cols, as the headless screen keeps it.
        fmt = "#{cursor_y},#{cursor_x},#{alternate_on},#{cursor_flag}"
        expected_fmt = (
            f"{snap.cursor_row},{term._screen.cursor.x},{int(snap.modes.alternate_screen)},"
            f"{int(snap.modes.cursor_visible)}"
        )
        assert tmux("display-message", "-p", fmt).strip() == expected_fmt
        if snap.title:  # else tmux shows its default, the host name
            assert tmux("display-message", "-p", "#{pane_title}").rstrip("\n") == snap.title
        flags = tmux(
            "display-message",
            "-p",
            "#{keypad_cursor_flag},#{keypad_flag},#{mouse_sgr_flag},#{mouse_standard_flag},"
            "#{mouse_button_flag},#{mouse_all_flag},#{wrap_flag}",
        ).strip()
        m = snap.modes
        assert flags == ",".join(
            str(int(v))
            for v in (
                m.application_cursor_keys,
                m.application_keypad,
                m.mouse_encoding == "sgr",
                m.mouse_tracking == "normal",
                m.mouse_tracking == "button",
                m.mouse_tracking == "any",
                m.auto_wrap,
            )
        )
        if not snap.modes.alternate_screen and term.scrollback:
            history = tmux("capture-pane", "-p", "-S", "-", "-E", "-1").rstrip("\n").split("\n")
            assert [r.rstrip() for r in history] == [r.rstrip() for r in term.scrollback]


SAMPLE = [f"{i:02d}: the quick brown fox jumps over the lazy dog" for i in range(1, 41)]
SAMPLE[4] = "05: wide 中文字符 text"
SAMPLE[6] = "07:\ttabbed"


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    path = tmp_path / "sample.txt"
    path.write_text("\n".join(SAMPLE) + "\n")
    return path


def test_vim_screen_round_trip_and_tmux(sample: Path, tmp_path: Path) -> None:
    require("vim")
    argv = ["vim", "-u", "NONE", "-N", "-n", "-i", "NONE", sample.name]
    with pty_run(argv, 80, 24, tmp_path) as run:
        run.pump(lambda t: "40L" in t.display[-1] and t.display[0].startswith("01:"))
        term = run.term
        assert term.modes.alternate_screen
        assert text(term)[:23] == [line.expandtabs(8) for line in SAMPLE[:23]]
        round_trip(term)
        assert_tmux_shows(term, tmp_path)
        run.proc.setwinsize(12, 50)  # SIGWINCH: vim redraws for the new size
        term.resize(50, 12)
        run.pump(lambda t: t.display[-1].strip() == "" and t.display[10].startswith("11:"))
        assert text(term)[:11] == [line.expandtabs(8)[:50] for line in SAMPLE[:11]]
        round_trip(term)
        assert_tmux_shows(term, tmp_path)
        run.proc.write(b":q!\r")
        run.pump(lambda t: not t.modes.alternate_screen)
        assert not term.modes.bracketed_paste
        assert not term.modes.application_cursor_keys


def test_less_screen_round_trip_and_tmux(sample: Path, tmp_path: Path) -> None:
    require("less")
    with pty_run(["less", sample.name], 60, 12, tmp_path) as run:
        run.pump(lambda t: t.display[-1].startswith("sample.txt"))
        term = run.term
        assert term.modes.alternate_screen
        assert text(term)[:11] == [line.expandtabs(8)[:60] for line in SAMPLE[:11]]
        assert term.line(11)[0].reverse  # the prompt is in reverse video
        round_trip(term)
        assert_tmux_shows(term, tmp_path)
        run.proc.write(b" ")  # next page
        run.pump(lambda t: t.display[0].startswith("12:"))
        round_trip(term)
        assert_tmux_shows(term, tmp_path)
        run.proc.write(b"q")
        run.pump(lambda t: not t.modes.alternate_screen)


TMUX_SCREENS = {
    "colours, wide, full last line": (
        "\r\n".join(f"{CSI}3{i % 8};4{(i + 1) % 8}mhistory {i}{CSI}m" for i in range(30))
        + f"{CSI}H{CSI}2J{CSI}1;1H中文 at start{CSI}1;39H字"
        + f"{CSI}2;1H{CSI}38;5;208;48;2;10;20;30mtrue colour{CSI}m"
        + f"{CSI}3;1H{CSI}1;3;4;9mattrs{CSI}m{CSI}?2004h{CSI}?1002;1006h"
        + f"{CSI}10;1H"
        + "L" * 39
        + "中"
        + f"{CSI}5;5H{ESC}]2;a title\x07"
    ),
    "pending wrap at the bottom": "\r\n".join(str(i % 10) * 40 for i in range(14)),
    "alternate over main": (
        f"main line\r\n{CSI}?1049h{CSI}3;3Halt line{CSI}?1h{ESC}={CSI}?25l{CSI}1000h"
    ),
}


@pytest.mark.parametrize("data", TMUX_SCREENS.values(), ids=TMUX_SCREENS.keys())
def test_snapshot_in_tmux(data: str, tmp_path: Path) -> None:
    term = make(data, cols=40, rows=10, scrollback=100)
    assert_tmux_shows(term, tmp_path)


# -- captured fixtures -----------------------------------------------------------


def _captures() -> list[Path]:
    return sorted(CAPTURED.glob("*.input"))


@pytest.mark.parametrize("path", _captures(), ids=lambda p: p.stem)
def test_captured_program_output(path: Path) -> None:
    """Raw vim/less output; the expected text is what tmux showed for the same bytes."""
    cols, rows = (int(n) for n in path.stem.rsplit("-", 1)[1].split("x"))
    expected = path.with_suffix(".output").read_text().split("\n")[:rows]
    term = make(path.read_bytes(), cols=cols, rows=rows)
    assert text(term) == expected
    split = HeadlessTerminal(cols, rows)
    data = path.read_bytes()
    for i in range(0, len(data), 5):
        split.feed(data[i : i + 5])
    assert state(split) == state(term)
    round_trip(term)


def _capture(
    name: str,
    argv: list[str],
    keys: list[tuple[bytes, Callable[[HeadlessTerminal], bool]]],
    *,
    size: tuple[int, int],
    workdir: Path,
) -> None:
    """Record a program's raw output; ask tmux what the same bytes show."""
    cols, rows = size
    with pty_run(argv, cols, rows, workdir) as run:
        for key, until in keys:
            if key:
                run.proc.write(key)
            run.pump(until)
        raw = bytes(run.raw)
    with tmux_showing(raw, cols, rows, workdir) as tmux:
        previous: list[str] = []
        shown: list[str] = []
        while not shown or shown != previous:  # until two looks a moment apart agree
            previous = shown
            time.sleep(0.5)
            shown = [r.rstrip() for r in tmux("capture-pane", "-p").split("\n")][:rows]
    stem = CAPTURED / f"{name}-{cols}x{rows}"
    stem.with_suffix(".input").write_bytes(raw)
    stem.with_suffix(".output").write_text("\n".join(shown) + "\n")


def main() -> None:
    import tempfile

    CAPTURED.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "sample.txt").write_text("\n".join(SAMPLE) + "\n")
        vim = ["vim", "-u", "NONE", "-N", "-n", "-i", "NONE", "sample.txt"]
        _capture(
            "vim-open",
            vim,
            [(b"", lambda t: "40L" in t.display[-1])],
            size=(80, 24),
            workdir=workdir,
        )
        _capture(
            "vim-edit",
            vim,
            [
                (b"", lambda t: "40L" in t.display[-1]),
                (b"Gox\xe4\xb8\xad\x1b", lambda t: t.display[-2].startswith("x中")),
                (b"ggdd", lambda t: t.display[0].startswith("02:")),
            ],
            size=(70, 20),
            workdir=workdir,
        )
        _capture(
            "less-pages",
            ["less", "sample.txt"],
            [
                (b"", lambda t: t.display[-1].startswith("sample.txt")),
                (b" ", lambda t: t.display[0].startswith("12:")),
                (b"/fox\r", lambda t: t.display[-1].startswith(":")),
            ],
            size=(60, 12),
            workdir=workdir,
        )


if __name__ == "__main__" and "--capture" in sys.argv:
    main()
