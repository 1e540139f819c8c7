"""What is sampled beside a load: a process tree's CPU and memory, memory trends, a server's
own counters.
"""
