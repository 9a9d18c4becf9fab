"""Energy, carbon and the throughput of a GPU under a power cap."""
