"""What a benchmark's figures depend on, for its header: the CPU model and the kernel level
(DESIGN.md: a performance figure names its CPU and level)."""

from __future__ import annotations

import argparse
import os
import platform
import sys

import numpy as np

import cuckoo


def cpu_model() -> str:
    """The CPU's model name with its x86 family and model numbers where Linux gives them
    (/proc/cpuinfo), else what the platform module knows."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor is enough
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or platform.machine() or "unknown CPU"
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']} model {fields['model']})"
    return f"{name}, {os.cpu_count()} CPUs"


def header() -> str:
    return (f"cuckoo {cuckoo.__version__}, numpy {np.__version__}, python {sys.version.split()[0]}\n"
            f"CPU: {cpu_model()}; kernel level {cuckoo.cpu_level()} (this CPU runs {', '.join(cuckoo.cpu_levels())})")


def add_level_option(parser: argparse.ArgumentParser) -> None:
    """--cpu all|portable|avx2|avx512: the kernel level(s) a benchmark measures."""
    parser.add_argument("--cpu", default=None, choices=["all", "portable", "avx2", "avx512"],
                        help="kernel level(s) to measure: one, or all this CPU has (default: the one running, "
                             "cuckoo.cpu_level(): CUCKOO_CPU or the best)")


def chosen_levels(parser: argparse.ArgumentParser, choice: "str | None") -> list:
    """The kernel levels that --cpu `choice` asks for; a level this CPU cannot run is a usage error."""
    if choice is None:
        return [cuckoo.cpu_level()]
    if choice == "all":
        return list(cuckoo.cpu_levels())
    if choice not in cuckoo.cpu_levels():
        parser.error(f"this CPU cannot run the kernel level {choice} (it runs {', '.join(cuckoo.cpu_levels())})")
    return [choice]
