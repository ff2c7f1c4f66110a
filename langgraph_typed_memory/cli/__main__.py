"""`python -m langgraph_typed_memory.cli` is `typed-memory`."""

import sys

from langgraph_typed_memory.cli.app import main

if __name__ == "__main__":
    sys.exit(main())
