"""The vocabulary every layer shares: errors and exit codes, environment variables, modes,
figures, safe text, service kinds.
"""
