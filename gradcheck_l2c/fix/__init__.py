"""Fixes written as source changes: each finding whose fix is mechanical becomes an edit of the user's file
(through LibCST, which keeps comments and formatting), shown as a unified diff, written with a ``.orig`` copy,
and verified by tracing the patched script again. It reads findings only; running the patched copy is the
front door's (``rerun.py``), handed in as a function.

``planner`` maps findings to edits (one module per family of transformations: ``numbers``, ``cuts``,
``registration``, ``optimizers``, ``snapshots``, ``leaves``), ``applier`` turns chosen edits into new sources, diffs and
written files, ``verifier`` groups the edits that cut one path and judges a rerun of the patched copy.
"""
