"""Compile-time accelerations the compiler calls: rebuilt and narrowed twins of kernel functions, Numba patches."""
