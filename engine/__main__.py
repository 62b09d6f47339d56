"""``python -m engine``."""

import sys

from engine._interrupt import interruptible

with interruptible():
    from engine.cli import main

sys.exit(main())
