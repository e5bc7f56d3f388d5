"""The report's figures: Transfer heatmaps (the paper's Figure 3) and size curves (Figure 4).

A heatmap cell is coloured only when its Transfer can be read: it shows the value and its n (A+B); a cell
with A+B < `ReportData.min_cell_n`, a job that did not learn, an undefined or a missing pair, and the rows of
train languages no job ran (`spec.train_languages`) are grey and say which, never a bare 0 % or 100 %.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from clkt.report.data import ReportData, pair_reading, slug
from clkt.report.metric_table import HEATMAP, PAIR_METRICS
from clkt.report.metrics import ALL_DOMAINS, PairMetrics

__all__ = ["heatmaps", "size_plots"]


def heatmaps(data: ReportData, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    langs = data.languages
    groups: dict[tuple[str, str, str], dict[tuple[str, str], PairMetrics]] = defaultdict(dict)
    for p in data.pairs:
        if p.domain == ALL_DOMAINS:
            groups[(p.model, p.strategy, p.scorer)][(p.train_lang, p.test_lang)] = p
    paths: list[Path] = []
    for (model, strategy, scorer), cells in sorted(groups.items()):
        m = np.full((len(langs), len(langs)), np.nan)
        labels: dict[tuple[int, int], str] = {}
        for (lt, ls), p in cells.items():
            i, j = langs.index(lt), langs.index(ls)
            reading = pair_reading(data, p)
            ab = HEATMAP.n(p.table)
            if reading == "ok":
                m[i, j] = 100 * (p.metric(HEATMAP.key) or 0)
                labels[(i, j)] = f"{m[i, j]:.0f}\nn={ab}"
            else:
                labels[(i, j)] = {"missing": "missing", "undefined": "undef.\nn=0", "not interpretable": f"no learn\nn={ab}",
                                  "too few": f"too few\nn={ab}"}[reading]
        fig, ax = plt.subplots(figsize=(1.2 * len(langs) + 2, 1.1 * len(langs) + 1.8))
        cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#e6e6e6")
        im = ax.imshow(np.ma.masked_invalid(m), vmin=0, vmax=100, cmap=cmap)
        ax.set_xticks(range(len(langs)), langs)
        ax.set_yticks(range(len(langs)), langs)
        ax.set_xlabel("test language")
        ax.set_ylabel("train language")
        for i in range(len(langs)):
            for j in range(len(langs)):
                trained = any((r, c) in labels for r, c in [(i, k) for k in range(len(langs))])
                txt = "—" if i == j else labels.get((i, j), "missing" if trained else "not run")
                ax.text(j, i, txt, ha="center", va="center", color="black" if np.isnan(m[i, j]) or m[i, j] >= 60 else "white", fontsize=7)
        ax.set_title(
            f"{HEATMAP.label} (%) — {model}\n{strategy}, {scorer}; n = {'+'.join(HEATMAP.denominator)}; grey: n < {data.min_cell_n}, or the job did not learn",
            fontsize=8,
        )
        fig.colorbar(im, ax=ax, fraction=0.046)
        fig.tight_layout()
        path = out / f"heatmap-{slug(model)}-{slug(strategy)}-{slug(scorer)}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def size_plots(data: ReportData, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = {j.model: (j.family, j.size_b) for j in data.jobs if j.family and j.size_b}
    families: dict[str, list[str]] = defaultdict(list)
    for model, (fam, _) in sizes.items():
        families[str(fam)].append(model)
    paths: list[Path] = []
    for fam, models in sorted(families.items()):
        if len(models) < 2:
            continue
        cells = [c for c in data.table2 if c.model in models]
        for strategy, scorer in sorted({(c.strategy, c.scorer) for c in cells}):
            if len({sizes[c.model][1] for c in cells if c.strategy == strategy and c.scorer == scorer}) < 2:
                continue
            metrics = list(PAIR_METRICS)
            fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 4), squeeze=False)
            for ax, m in zip(axes[0], metrics, strict=True):
                metric = m.key
                for dom in sorted({c.domain for c in cells} - {ALL_DOMAINS}):
                    pts = sorted(
                        (sizes[c.model][1], mean)
                        for c in cells
                        if c.domain == dom and c.strategy == strategy and c.scorer == scorer and (mean := c.metric(metric).mean) is not None
                    )
                    if pts:
                        ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], marker="o", label=dom)
                ax.set_xscale("log")
                ax.set_xlabel("parameters (B)")
                ax.set_ylabel(f"{metric} (%)")
                ax.set_title(f"{fam}: {metric}")
                if ax.get_legend_handles_labels()[0]:
                    ax.legend(fontsize=7)
            fig.tight_layout()
            path = out / f"size-{slug(fam)}-{slug(strategy)}-{slug(scorer)}.png"
            fig.savefig(path, dpi=110)
            plt.close(fig)
            paths.append(path)
    return paths
