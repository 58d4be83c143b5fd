"""`python -m pongrl.cli`: the same as `pongrl` and `python -m pongrl`."""

import sys

from pongrl.cli import main

sys.exit(main())
