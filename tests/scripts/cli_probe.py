"""Records how the interpreter looks from inside a script run as __main__, for the runner tests.

Writes a JSON object to the file named by the first argument; prints one line per argument.
"""
import json
import os
import sys

import cli_sibling

with open(os.path.join(os.path.dirname(__file__), "cli_data.txt"), encoding="utf-8") as data:
    greeting = data.read().strip()

state = {
    "name": __name__,
    "file": __file__,
    "spec": None if __spec__ is None else __spec__.name,
    "package": __package__,
    "loader": type(__loader__).__name__,
    "argv": sys.argv,
    "path0": sys.path[0],
    "main_is_this_module": sys.modules["__main__"].__dict__ is globals(),
    "sibling": cli_sibling.VALUE,
    "greeting": greeting,
}
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump(state, out)

if __name__ == "__main__":
    for argument in sys.argv[2:]:
        print(f"arg: {argument}")
