"""Backends other than Triton: the vectorised torch path (CPU, and any device)."""
