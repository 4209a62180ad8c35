"""Record: what happens while the script runs — the torch-function interceptor, patches, provenance (taint),
the trace state and its events, watched tensors, user-code locations and bounded graph walks."""
