"""The package's version, stamped on every output row (``code_version``): at the ground floor, so
every stage reads it without importing the package's public face (:mod:`ndcg_spark`)."""

__version__ = "0.1.0"
