"""Clients of a server: the async `Client` (client), the Python API for scripts
(scripting; blocking: sync, also ``ptyvisor.sync``), wait conditions (waiting), and
the pytest plugin (pytest_plugin).

Nothing is imported here: ``ptyvisor.client.client`` is the async client."""
