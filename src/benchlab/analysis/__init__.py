"""Analysis of stored trials: statistics now; verdicts and relative figures later."""
