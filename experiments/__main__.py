"""Entry point for python -m experiments."""

import sys

from experiments.cli import main

sys.exit(main())
