"""Fixes written as source changes: each finding whose fix is mechanical becomes an edit of the user's file
(through LibCST, which keeps comments and formatting), shown as a unified diff, written with a ``.orig`` copy,
and verified by tracing the patched script again.

``planner`` maps findings to edits (one module per family of transformations: ``numbers``, ``cuts``,
``registration``, ``snapshots``, ``leaves``), ``applier`` turns chosen edits into new sources, diffs and
written files, ``verifier`` groups the edits that cut one path and judges a rerun of the patched copy.
"""
