"""Profile a whole `nutch2 crawl` of the synthetic web with py-spy and summarise where the CPU goes.

    python -m bench.profile [--hosts 50] [--pages 100] [--threads 16] [--default] [--out bench/out/profile]

Writes <out>.collapsed (py-spy raw stacks: flamegraph.pl / speedscope can read them) and prints, per job
(inject, generate, fetch, parse, updatedb; "other" is start-up, the CLI and the runner), its share of on-CPU
samples and the functions with the most self and total time. --default profiles nutch2's defaults (the runner it
picks, its worker processes included) instead of one local task.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

from bench.benchmarks import NUTCH2, REPO, _defines, _tmp
from bench.web import Nginx, generate_web

JOBS = ("inject", "generate", "fetch", "parse", "updatedb")
_JOB_CODE = [(f"jobs/{j}.py", j) for j in JOBS] + [("nutch2/fetch/", "fetch"), ("nutch2/parse/", "parse"),
                                                   ("nutch2/crawldb/", "updatedb")]


def job_of(frames: list[str]) -> str:
    """The job a stack belongs to: the outermost frame in a job's code (workers' stacks have no command frame)."""
    for frame in frames:
        for code, job in _JOB_CODE:
            if code in frame:
                return job
    return "other"


def summarise(collapsed: Path, top: int = 25) -> str:
    per_job: Counter[str] = Counter()
    self_t: dict[str, Counter[str]] = defaultdict(Counter)
    total_t: dict[str, Counter[str]] = defaultdict(Counter)
    n = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        c = int(count)
        frames = stack.split(";")
        job = job_of(frames)
        per_job[job] += c
        n += c
        leaf = frames[-1]
        self_t[job][leaf] += c
        for f in set(frames):
            total_t[job][f] += c
    out = [f"{n} samples"]
    for job, c in per_job.most_common():
        out.append(f"\n== {job}: {c} samples ({100 * c / n:.1f}%)")
        out.append("  self:")
        out += [f"    {100 * v / c:5.1f}%  {k}" for k, v in self_t[job].most_common(top)]
        out.append("  total:")
        out += [f"    {100 * v / c:5.1f}%  {k}" for k, v in total_t[job].most_common(top)]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=50)
    ap.add_argument("--pages", type=int, default=100)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--rate", type=int, default=100)
    ap.add_argument("--gil", action="store_true", help="only samples of the thread holding the GIL (CPU)")
    ap.add_argument("--idle", action="store_true", help="include idle (waiting) threads")
    ap.add_argument("--default", action="store_true", help="nutch2's defaults: its runner, workers included")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "profile"))
    args = ap.parse_args()
    pyspy = shutil.which("py-spy")
    if pyspy is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "py-spy"], check=True)
        pyspy = shutil.which("py-spy")
    web = generate_web(args.hosts, args.pages)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = _tmp("profile")
    try:
        with Nginx(web) as nginx:
            seeds = data / "seeds.txt"
            seeds.write_text("\n".join(nginx.seeds()) + "\n")
            threads, defines = args.threads, _defines(data)
            if args.default:
                from bench.benchmarks import default_tasks

                threads = max(1, args.threads // default_tasks())
                defines = _defines(data, mapreduce_job_tasks=None)
            cmd = NUTCH2 + ["crawl", str(seeds), "-crawlId", "bench", "-rounds", "6", "-topN",
                            str(web.total + 10), "-threads", str(threads)] + defines
            mode = ["--gil"] if args.gil else ["--idle"] if args.idle else []
            mode += ["--subprocesses"] if args.default else []
            subprocess.run([pyspy, "record", "-r", str(args.rate), *mode, "-f", "raw", "-o", f"{out}.collapsed", "--",
                            *cmd], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    text = summarise(Path(f"{out}.collapsed"))
    Path(f"{out}.txt").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
