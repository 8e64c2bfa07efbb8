"""CUDA tensors: how an input on a device is read (``route``: the one decision, and each entry
point's staged path), and the staging pipeline under it (``staging``: pinned buffers reused
across calls, copies overlapped with encoding). Nothing here imports torch: every function is
reached with a tensor, so torch is loaded."""
