"""Other multi-agent simulators measured beside gpu_zoo, each optional: a missing one is recorded as skipped."""
