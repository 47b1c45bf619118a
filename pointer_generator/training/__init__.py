"""Training: the distribution-aware trainer (TF1 Adagrad, the original's clipping norm)
and train mode's loop."""
