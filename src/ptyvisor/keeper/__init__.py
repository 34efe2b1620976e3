"""The keeper: the small process ``ptyvisor serve`` is, which owns every program so
that programs outlive the server process (keeper.py), and the plumbing it shares with
the server: starting a program clean (spawn), its output ring (ring), its processes
(proctable), descriptors, ``serve``'s options and log, private files.

Stdlib only, everything in it: tests/test_stdlib_only.py says so. Nothing is imported
here."""
