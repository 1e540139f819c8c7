"""The HTTP layer: the endpoint contract (scenarios, their data and answers), protocols, TLS,
one verifying request.
"""
