"""Small helpers shared by the benchmark scripts (timing, machine line, table printing)."""

import os
import platform
import time
from datetime import date


def best_time(fn, repeat=5, number=1):
    """Best wall time of ``repeat`` runs of ``number`` calls (seconds per call)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{date.today().isoformat()}, {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def table(header, rows):
    """Print a Markdown table."""
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(str(v) for v in r) + " |")
