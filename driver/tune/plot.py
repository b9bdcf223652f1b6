"""``vta tune --plot``: best-so-far cost against trials, one line per task (matplotlib)."""
from __future__ import annotations


def plot_curves(results, path: str, unit: str = "s") -> str:
    """Write the figure of ``results`` (``TaskResult`` s, their ``curve``) to ``path``
    (any format matplotlib infers from the suffix: .png, .svg, .pdf); returns ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in results:
        pts = [(i + 1, c) for i, c in enumerate(r.curve) if c != float("inf")]
        if pts:
            scale = 1e3 if unit == "s" else 1.0
            ax.step([p[0] for p in pts], [p[1] * scale for p in pts], where="post",
                    label=(r.task.name or r.task.key)[:40])
    ax.set_xlabel("trials")
    ax.set_ylabel("best cost so far (" + ("ms" if unit == "s" else unit) + ")")
    ax.set_title("auto-tuning: best-so-far per task")
    if results:
        ax.legend(fontsize=6, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
