"""Research built on gpu_zoo: studies that use the product and are not part of it."""
