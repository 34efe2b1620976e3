"""``python -m ptyvisor`` runs the same CLI as the console script."""

import sys

from ptyvisor.cli import main

sys.exit(main())
