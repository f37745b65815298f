"""What the numbers were measured on: printed with every table and stored with every result."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import torch


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def describe() -> dict:
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "load_average_at_start": load_average(),
    }


def describe_line(m: dict) -> str:
    return (
        f"{m['cpu']}, {m['cores']} cores, torch {m['torch']} ({m['torch_threads']} threads), "
        f"Python {m['python']}, load average {m['load_average_at_start']}"
    )
