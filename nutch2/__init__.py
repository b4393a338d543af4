"""nutch2: a storage-abstracted web crawler in the style of Apache Nutch 2."""

__version__ = "0.1.0"
