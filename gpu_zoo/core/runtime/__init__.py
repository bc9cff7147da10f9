"""Running compiled kernels on a batch: its buffers, launches, CUDA graphs and `BatchedEnv`."""
