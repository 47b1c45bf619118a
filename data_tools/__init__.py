"""Tools that turn CNN/Daily Mail (or a user's own text) into the original `.bin` format."""
