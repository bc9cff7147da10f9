"""From a spec to compiled kernels: layout, kernel plan, generated source, the kernel cache and CUDA cubins."""
