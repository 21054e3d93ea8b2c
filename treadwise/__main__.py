"""Entry point for python -m treadwise."""

import sys

from treadwise.cli import main

sys.exit(main())
