"""wgmma-layout has no figure in scripts/plot.py, by choice: NOT_DRAWN says why."""
NOT_DRAWN = "pass/fail placement checks (mismatch counts) a table says as well"
