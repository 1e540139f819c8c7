"""Hosts: where the roles of a run (server, database, load) run. See base.py."""
