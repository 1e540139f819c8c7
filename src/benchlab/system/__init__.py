"""The machine's plumbing: processes and users, files root may write, the journal, caches, the
Go toolchain, CPU accounting.
"""
