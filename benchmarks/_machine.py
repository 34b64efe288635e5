"""What a benchmark's figures depend on, for its header: the CPU model and the kernel level
(DESIGN.md: a performance figure names its CPU and level)."""

from __future__ import annotations

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
