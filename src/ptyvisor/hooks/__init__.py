"""Compatibility: ``python -m ptyvisor.hooks AGENT`` is what agents started before the
layout moved have in their settings; it runs `ptyvisor.agents.hooks` (public, see
docs/architecture.md, *Module paths others depend on*)."""
