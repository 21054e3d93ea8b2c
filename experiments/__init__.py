"""The experiment harness: sweep persona x model x temperature grids over scripted scenarios."""
