"""Install hook: vendor the web page's pinned xterm.js before packaging (see web_assets.py).

Runs for ``pip install .`` and ``pip install -e .`` alike. Without network and cache
the install still succeeds, without the page's terminal; ``ptyvisor serve`` says so.
"""

import importlib.util
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


def _vendor_web_assets() -> None:
    path = Path(__file__).resolve().parent / "src" / "ptyvisor" / "web_assets.py"
    spec = importlib.util.spec_from_file_location("_ptyvisor_web_assets", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        module.vendor()
    except (module.VendorError, OSError) as error:
        print(f"warning: web page assets not vendored: {error}", file=sys.stderr)


class BuildPyWithWebAssets(build_py):
    def run(self) -> None:
        _vendor_web_assets()
        super().run()


setup(cmdclass={"build_py": BuildPyWithWebAssets})
