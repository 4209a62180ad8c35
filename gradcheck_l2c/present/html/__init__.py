"""The HTML report: an index of findings that sorts and filters in the browser, and a page per source file
with the cut lines marked, in the spirit of coverage.py's HTML report. Static files, no server, no network."""
