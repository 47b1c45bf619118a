"""Evaluation: the eval job (validation loss, best models) and official ROUGE-1.5.5."""
