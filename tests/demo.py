"""A crawl end to end on the embedded (sqlite) store, against the local synthetic test web.

These machines reach no web sites, so the demo starts the test web of tests/testweb.py on loopback
(several hosts 127.0.1.x), crawls it for three rounds with `nutch2 crawl`, and shows the result.
Run from the repository root: `python tests/demo.py [DATA_DIR]`.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.testweb import TestWeb  # noqa: E402


def run(*args: str) -> None:
    print("$ nutch2 " + " ".join(args), flush=True)
    rc = subprocess.call([sys.executable, "-m", "nutch2.cli", *args])
    if rc != 0:
        sys.exit(rc)


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="nutch2-demo-"))
    with TestWeb(hosts=6, pages_per_host=20, slow_seconds=1.0) as web:
        seeds = data / "seeds.txt"
        data.mkdir(parents=True, exist_ok=True)
        seeds.write_text(f"# the home page of the first test host\n{web.seed_url}\n")
        # the test web's hosts are 127.0.1.x, this machine's: listed for the address guard, which refuses requests
        # to the crawler's own machine and network unless a host is a seed or listed
        common = ["-D", f"storage.data.dir={data / 'crawl'}", "-D", "http.agent.name=nutch2-demo",
                  "-D", "fetcher.server.delay=0.2", "-D", "fetcher.address.allow=127.0.1.0/24"]
        run("crawl", str(seeds), "-crawlId", "demo", "-rounds", "3", "-threads", "8", *common)
        run("readdb", "-stats", "-crawlId", "demo", *common)
        run("readdb", "-url", web.seed_url, "-crawlId", "demo", *common)
        print(f"\ncrawl db: {data / 'crawl' / 'demo_webpage.sqlite'}  "
              f"(dump it with: nutch2 readdb -dump DIR -crawlId demo -D storage.data.dir={data / 'crawl'})")


if __name__ == "__main__":
    main()
