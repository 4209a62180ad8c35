"""A package for `gradcheck-l2c trace -m cli_pkg` tests."""
