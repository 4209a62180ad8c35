import sys

from gradcheck_l2c.cli import main

sys.exit(main())
