"""CPU-scale experiments on the shared CNN/DM sample (data split; runs added later)."""
