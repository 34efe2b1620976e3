"""Tests of the agents package's modules, mirroring src/ptyvisor/agents; the real agent
CLIs end to end are in clis/."""
