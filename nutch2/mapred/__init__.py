"""Running jobs: the job contract, the local, processes and Spark runners, the shuffle, task leases, stop, measures."""
