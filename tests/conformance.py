"""Print how many external test vectors nutch2 agrees with, per source: `python -m tests.conformance`.

A vector agrees when nutch2 gives exactly the source's answer; deliberate differences (README, "Differences from
Nutch") count as disagreements here. The vectors and their sources are in tests/test_conformance_*.py.
"""

from __future__ import annotations

import importlib
import sys

MODULES = ("test_conformance_urls", "test_conformance_urlfilter", "test_conformance_robots", "test_conformance_html",
           "test_conformance_scoring")


def main() -> int:
    total_agree = total = 0
    for name in MODULES:
        module = importlib.import_module(f"tests.{name}")
        for source, (agree, count) in module.agreement().items():
            total_agree += agree
            total += count
            print(f"{source:<48} {agree:>5} / {count:<5} {100.0 * agree / count:5.1f}%")
    print(f"{'all':<48} {total_agree:>5} / {total:<5} {100.0 * total_agree / total:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
