"""Run by `-m cli_pkg`: prints its module identity and arguments."""
import sys

print(f"{__name__} {__spec__.name} {__package__} {sys.argv[1:]}")
