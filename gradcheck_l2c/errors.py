"""The tool's exceptions: one base class, small subclasses, messages meant for one line."""


class GradcheckError(Exception):
    """Base class of every error the tool raises on purpose."""


class UsageError(GradcheckError):
    """The tool was called wrongly (bad option, missing script, unknown watch name)."""


class NestedTraceError(GradcheckError):
    """A trace was entered again while it runs (another trace entered in the same thread joins it)."""


class ConcurrentTraceError(NestedTraceError):
    """A trace was started in one thread while another thread's trace is active."""
