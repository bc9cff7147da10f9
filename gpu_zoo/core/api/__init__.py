"""What an env author writes and calls: the spec, its params, kernel functions, random numbers, tuning, rendering."""
