"""Write the figures of examples/fpr_experiments.ipynb to docs/img/*.png.

    pip install ".[plot]"
    python examples/make_figures.py            # writes docs/img/{load,fill,fpr,space}.png
    python examples/make_figures.py --out DIR  # elsewhere

Each figure takes a few seconds; the tables they are drawn from are printed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from cuckoo import experiments, plotting  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="output directory")
    parser.add_argument("--dpi", type=int, default=110)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    def save(fig: plt.Figure, name: str, started: float) -> None:
        path = args.out / name
        fig.savefig(path, dpi=args.dpi)
        plt.close(fig)
        print(f"wrote {path} ({time.perf_counter() - started:.1f} s)")

    # 1. Load factor vs bucket size and fingerprint size.
    t = time.perf_counter()
    loads = experiments.max_load_sweep(range(4, 17), (2, 4, 8), capacity=100_000, repeats=3, as_frame=False)
    ax = plotting.plot_max_load(loads)
    save(ax.figure, "load.png", t)

    # 2. Insert cost as the filter fills, per bucket size.
    t = time.perf_counter()
    curves = [experiments.fill_curve(100_000, 16, b, steps=40) for b in (2, 4, 8)]
    for c in curves:
        print(c)
    ax = plotting.plot_fill_curve(curves)
    save(ax.figure, "fill.png", t)

    # 3. FPR vs fingerprint bits: measured against theory, and their ratio.
    t = time.perf_counter()
    sweep = experiments.fpr_sweep(as_frame=False)
    print(experiments.format_table(sweep, ["fingerprint_bits", "bucket_size", "load", "negatives", "false_positives",
                                           "measured_fpr", "expected_fpr", "ratio"]))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.4, 7.6), height_ratios=(2.2, 1), sharex=True,
                                      layout="constrained")
    plotting.plot_fpr_sweep(sweep, ax=top)
    plotting.plot_fpr_ratio(sweep, ax=bottom)
    top.set_xlabel("")
    save(fig, "fpr.png", t)

    # 4. Space: bits per item vs FPR, against Bloom and the lower bound.
    t = time.perf_counter()
    ax = plotting.plot_space(bucket_size=4, sweep=sweep)
    save(ax.figure, "space.png", t)


if __name__ == "__main__":
    main()
