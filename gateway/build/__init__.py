"""Build-time command-line tools: what `make` runs to prepare what the gateway serves."""
