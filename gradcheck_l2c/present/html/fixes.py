"""A finding's mechanical fix as the report shows it: the unified diff, its lines coloured (added, removed, hunk
headers), and what ``gradcheck-l2c fix --verify`` made of it (verified / not enough / not checked, and why)."""
from __future__ import annotations

import html

from gradcheck_l2c.records import Finding

_e = html.escape
#: The CSS class of a diff line, by its first character; file headers (``---``/``+++``) are told apart first.
_LINE_CLASSES = {"+": "add", "-": "del", "@": "hunk"}


def diff_block(finding: Finding) -> str:
    """The fix's diff in a ``<details>`` (open), or nothing when the fix is in words only."""
    if not finding.fix_diff:
        return ""
    rows = []
    for line in finding.fix_diff.splitlines():
        css = "file" if line.startswith(("--- ", "+++ ")) else _LINE_CLASSES.get(line[:1], "same")
        rows.append(f'<span class="{css}">{_e(line) or " "}</span>')
    return (f'<details class="diff" open><summary>the change (<code>gradcheck-l2c fix</code>)</summary>'
            f'<pre>{"".join(rows)}</pre></details>')  # each line a block: no newlines between


def verdict(finding: Finding) -> str:
    """The verification's verdict and its reason, or nothing when the fix was not verified."""
    if not finding.verified:
        return ""
    css = finding.verified.replace(" ", "-")
    note = f" {_e(finding.verify_note)}" if finding.verify_note else ""
    return f'<div class="verdict {_e(css)}"><b>{_e(finding.verified)}</b>{note}</div>'
