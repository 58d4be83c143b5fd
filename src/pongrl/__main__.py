import sys

from pongrl.cli import main

sys.exit(main())
