"""Reports read only the results store."""
