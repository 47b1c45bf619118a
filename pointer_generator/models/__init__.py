"""Models built from `layers`: the pointer-generator network, the candidate form of its
final distribution used in decoding, and loading the original's TF1 checkpoints."""
