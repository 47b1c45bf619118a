"""Decoding: decode mode's job (single pass or concurrent), its folder's files and
records, its shards and attention pages, and ABS+'s feature tuning job, over the search
(`pointer_generator.search`) and a trained experiment (`pointer_generator.summarizing`)."""
