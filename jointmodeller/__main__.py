"""`python -m jointmodeller` is the `jointmodeller` command."""

import sys

from jointmodeller.cli import main

sys.exit(main())
