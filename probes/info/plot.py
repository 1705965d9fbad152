"""info has no figure in scripts/plot.py, by choice: NOT_DRAWN says why."""
NOT_DRAWN = "constants its table shows as well"
