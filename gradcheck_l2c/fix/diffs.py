"""Each finding's mechanical fix as a unified diff, for reports that show the change beside the finding (the HTML
report of ``trace --html``, the pytest plugin and the notebook magic); without LibCST the findings stay as they are."""
from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Sequence

from gradcheck_l2c.fix.applier import patched, unified_diff
from gradcheck_l2c.fix.planner import plan_fixes
from gradcheck_l2c.records import Finding


def with_fix_diffs(findings: Sequence[Finding]) -> list[Finding]:
    """The findings, those without a ``fix_diff`` whose fix is mechanical given theirs; only ``fix_diff`` changes."""
    wanting = [finding for finding in findings if not finding.fix_diff and not finding.suppressed]
    if not wanting or importlib.util.find_spec("libcst") is None:
        return list(findings)
    plan = plan_fixes(wanting)
    return [dataclasses.replace(finding, fix_diff=unified_diff(patched([edit])))
            if not finding.fix_diff and (edit := plan.edit_for(finding)) is not None else finding
            for finding in findings]
