"""Training and running gpu_zoo environments end to end on one device."""
