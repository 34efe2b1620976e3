"""Every figure of the performance issue in one table, measured side by side in one run:
one module per row (echo, attach, output_path, headless, idle_close, fanout), what they
share (common), their helper processes (workers), and the runner (``scripts/bench_all.py``).

Runs a real ``ptyvisor serve`` of this checkout (`serving`: a free port, a temporary
state directory and token) and prints one markdown table (what | measured | target)
on stdout; progress goes to stderr. Absolute numbers are noisy on a shared 2-core
machine: read the ratios and percentiles.

    .venv/bin/python scripts/bench_all.py [--quick] [--json [FILE]] [--only ROWS]

``--quick`` shrinks every size (under a minute in all) to check the script, not the
server; the full run takes about three minutes. Rows are measured in the order 5, 7, 6,
3-4, 2, 1, 8, one at a time, each with nothing else running but the idle ``cat`` of
row 1's echo. ``--json`` also writes the raw figures, samples included, to FILE (or to
stdout after the table). Row 5 installs @xterm/headless 6.0.0 with
scripts/install_xterm_headless.sh (cached in ~/.cache/ptyvisor; Node and npm are
needed); row 4 uses tmux if it is on PATH. A row that cannot be measured says why.

The rows (sizes of the full run):

1. Keystroke echo through a ``cat`` session (p50/p99/max of the round trip of a line
   typed, ``bench_hardening.Echo``): with nothing else running (the baseline), and
   while another session floods 256 MiB of base64 (``base64 /dev/urandom | head -c
   256M``) that one viewer follows from its own process.
2. Attach to an idle 120x40 session that holds 1000 lines of scrollback: from sending
   ``attach`` to receiving ``attached``, over one plain connection, detaching between.
   Cold: no ``since``, so the reply carries the snapshot; hot: ``since`` the current
   seq (an exact, empty replay).
3. A ``snapshot`` requested as soon as the last byte of a 60 MB flood has reached an
   attached Client (the headless terminal may still be catching up), once per round of
   row 4 (``bench_throughput.ptyvisor_round``).
4. The output path: ``cat`` of a 60 MB log-like file in a raw-mode PTY (bytes pass
   unchanged), read by a plain ``websockets`` client attached through ptyvisor, by the
   project's Client, and by tmux (a detached 200x50 session with no client: from the
   key that starts ``cat`` until the pane's command says it is done); each rate
   divided by that of a plain Python loop reading the same ``cat`` from a PTY
   (``bench_throughput.raw_rate``, ptyprocess). Rounds alternate; medians of the
   per-round ratios.
5. Headless terminal throughput, MB/s of bytes fed in 64 KiB chunks, for ptyvisor's
   HeadlessTerminal, stock pyte (``pyte.Screen`` + ``pyte.ByteStream``; it raises on
   some real output, which the row then says) and @xterm/headless 6.0 in Node, on the
   same bytes: real programs' output (tests/terminal/captured/*.input, vim and less, repeated;
   80x24), a synthesised TUI stream (cursor moves, SGR from a fixed theme, partial
   redraws, box drawing, a spinner and status line; 120x40), and log lines (the start
   of row 4's file; 120x40). The ratio ours / xterm. xterm is timed from its first
   write until the last one is parsed, on a second pass: its JIT warm, as in a server
   that has run a while (cold, it is about half as fast; ours is the same every pass).
   Beside it, the pure-Python floor (`floor_rate`): the parser's regular expressions
   tokenising the same bytes with one empty call per token, no screen at all. A
   terminal written in Python cannot be faster than that.
6. Closing 200 sessions at once (``close`` for each, concurrently, on one
   connection, from a process of its own as another user's client would be): the
   time until every reply came, and the echo of row 1 meanwhile. (With the closer in
   the echo's own process, its 200 replies delayed the echo client itself: p99
   218-268 ms, of which the server's event loop never stalled over 15 ms.)
7. The same 200 sessions idle (``sleep``) before that, on the fresh server: the CPU
   time (utime + stime in /proc/<pid>/stat) of the server, the ``ptyvisor.server.worker``
   child of the keeper that ``serve`` is, over 60 s as % of one core, beside the same
   with no session (and the keeper's); RSS and file descriptors each session adds to
   the server and the keeper.
8. 50 plain websockets clients (plain, so the server's lagging path is tested, where
   Client's unbounded queue would hide it: a plain client falls behind as soon as it
   reads slower than the flood) attached (``since`` 0) to one session running ``cat``
   of row 4's file: each client's bytes are compared with the file at their seq. A
   client is exact (every byte, no snapshot), resynced (``lagging`` snapshots, and
   exact bytes between them), or diverged/lost. And the rate the server read the PTY
   at (from the key that starts ``cat`` until ``stats`` counts every byte) with 50
   clients / with 1, measured two ways, each round doing both: 8b with the clients in
   a process of their own at nice 19, which leaves the CPU to the server first, as
   clients on other machines would (the ratio then says what fan-out costs the
   server); 8c with the clients in the benchmark's own process at normal priority,
   where 50 Python clients receiving as fast as they can take a core of the two.
"""
