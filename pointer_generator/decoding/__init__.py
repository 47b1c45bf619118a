"""Decoding: decode mode's jobs, the decode folder's files and attention pages, and
`summarize` for raw text, over the search (`pointer_generator.search`)."""
