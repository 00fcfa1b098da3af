"""Triton kernels: the shared affine-scan core and one fused kernel per estimator."""
