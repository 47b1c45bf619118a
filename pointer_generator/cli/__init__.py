"""The command line: flags, the `pointer-generator` entry point and its subcommands. The
only package that reads absl flags."""
