"""End-to-end tests of the real agent CLIs, offline against a fake model server."""
