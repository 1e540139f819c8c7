"""benchlab tune: the app probe (run by the user's interpreter), the candidates and their
commands, the requests, the search."""
