"""Entry point for python -m treadwise."""

import sys

from treadwise.command_line import main

sys.exit(main())
