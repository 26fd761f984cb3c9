"""``python -m grader``: see grader.batch.cli."""

import sys

from grader.batch.cli import main

sys.exit(main())
