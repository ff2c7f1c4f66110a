"""What every backend shares: the store's public surface, the batch engine, the record
operations plans build on, search, the gate's writes, and the plan protocol with its drivers."""
