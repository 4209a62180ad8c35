"""`module_requires_grad`: ``module.requires_grad = True`` where ``module.requires_grad_(True)`` was meant. A Module has
no such flag: the assignment makes a plain attribute, and its parameters keep theirs (a pooler unfrozen this way stays
frozen; a backbone frozen this way keeps learning). Named at the assignment, once per parameter it misled (by the name
the script read its ``.grad`` as, that read as the symptom)."""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "module_requires_grad"


def scan(run) -> list[Finding]:
    found = []
    reads = run.record.empty_reads.watched
    for flag in run.record.misleading_flags:
        keys = sorted(flag.keys) or [None]
        for key in keys:
            read = reads.get(key) if key is not None else None
            name = read.name if read is not None else (
                run.name(key) if key is not None else f"the {flag.count} parameters of the {flag.module_class}")
            if flag.value:
                message = (f"this line sets requires_grad = True on the {flag.module_class} object itself, an "
                           f"attribute no parameter reads: {name} kept requires_grad=False, so no backward gives it a "
                           "gradient and it never learns.")
            else:
                message = (f"this line sets requires_grad = False on the {flag.module_class} object itself, an "
                           f"attribute no parameter reads: {name} kept requires_grad=True, so it got gradients and was "
                           "not frozen.")
            found.append(run.finding(
                KIND, "error" if flag.value else "warning", name, flag.site, message,
                f"call .requires_grad_({flag.value}) on the module instead: it sets the flag of every parameter it "
                "holds.", related={"symptom": read.site} if read is not None else None,
            ))
    return found
