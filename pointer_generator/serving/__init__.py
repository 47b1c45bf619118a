"""Serving a trained model over HTTP (`pointer-generator serve`): `batcher.py` groups
concurrent requests into model batches, `http_server.py` is the JSON endpoint and the
page."""
