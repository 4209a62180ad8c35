"""A module next to cli_probe.py, importable only when the script's folder is sys.path[0]."""
VALUE = "sibling imported"
