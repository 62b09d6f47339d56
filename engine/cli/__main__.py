"""``python -m engine.cli``, as before the CLI became a package (``python -m engine`` too)."""

import sys

from engine.cli import main

sys.exit(main())
