"""Run by `-m cli_pkg.probe`: imports a sibling module relatively and prints its identity and arguments."""
import os
import sys

from . import helper

print(f"{__name__} {__spec__.name} {__package__} {os.path.basename(__file__)} {helper.VALUE} {sys.argv[1:]}")
