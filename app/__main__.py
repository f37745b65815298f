"""Placeholder entry until the API lands: prints what the bundled model says for a prompt."""

import sys

from model import load

lm = load(sys.argv[1] if len(sys.argv) > 1 else "classroom")
print(lm.config)
