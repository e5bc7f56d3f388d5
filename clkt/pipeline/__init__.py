"""Stage workers: gate, probe (+judge), generate, verify, translate — each on the lease-claim queue."""
