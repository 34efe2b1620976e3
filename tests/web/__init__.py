"""The web page, tested in a real browser (Debian's Chromium driven by Playwright)."""
