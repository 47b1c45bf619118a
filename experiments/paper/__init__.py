"""Recipes that reproduce the paper's Table 1 models with the command-line interface."""
