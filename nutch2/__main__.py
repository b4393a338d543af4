"""`python -m nutch2` runs the nutch2 command."""

import sys

from nutch2.cli import main

sys.exit(main())
