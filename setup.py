"""The packages, found rather than listed (pyproject.toml holds everything else): nutch2 and each folder below it,
a new built-in plugin's included, and stores/, jobs/ and conf/ as nutch2.stores, nutch2.jobs and nutch2.conf
(pyproject.toml's package-dir)."""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["nutch2", "nutch2.*"]), "nutch2.stores", "nutch2.jobs", "nutch2.conf"])
