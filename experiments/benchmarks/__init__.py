"""Benchmarks (`python -m experiments.benchmarks.<name>`). TensorFlow is imported here,
before any benchmark module, with the notices it prints at import held back
(`pointer_generator.cli.console.import_tensorflow`): a benchmark's first lines are its own."""

from pointer_generator.cli import console

console.import_tensorflow()
