"""Checks of the catalogue and the machine one stack at a time: conform, drain, slow clients,
selfcheck, noise.
"""
