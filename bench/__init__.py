"""nutch2 benchmarks (issue 5): `python -m bench <name> [--quick]`. See bench/README.md."""
