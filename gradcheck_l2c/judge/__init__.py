"""Judge: after the trace, turn the record into findings — which watched tensors missed a gradient, why and
where (run.py), the detectors that word each kind, and the explanation of a backward that raised."""
