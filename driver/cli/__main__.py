"""``python -m driver.cli ...``: the ``vta`` command without the installed script."""
import sys

from driver.cli.main import main

if __name__ == "__main__":
    sys.argv[0] = "vta"
    sys.exit(main())
