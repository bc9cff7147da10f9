"""Economic simulations (after the AI Economist's gather-trade-build world)."""
