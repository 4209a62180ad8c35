"""Imported relatively by cli_pkg.probe."""
VALUE = "relative import ok"
