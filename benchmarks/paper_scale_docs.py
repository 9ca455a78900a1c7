"""Writes section 6 of docs/SCALING.md from a `benchmarks/paper_scale.py` run."""

from __future__ import annotations

from pathlib import Path

from paper_scale_support import Projection

# -- docs/SCALING.md section 6 -----------------------------------------------------------------

BEGIN, END = "<!-- paper_scale.py output: begin -->", "<!-- paper_scale.py output: end -->"


def write_docs(
    path: Path,
    measured,
    models,
    check,
    selfcheck,
    proj: Projection,
    result,
    knn_old,
    knn_new,
    evals,
    client_row,
    memory,
    wall,
    n_queries,
    header: str,
) -> None:
    """Replace the generated block of docs/SCALING.md section 6 with this run's figures."""
    table, model = times_table(measured), model_table(models, check, list(measured))
    block = [
        BEGIN,
        "",
        "```",
        header.rstrip(),
        "```",
        "",
        "CPU seconds, one thread, per fit (knn: per query, prepare + search):",
        "",
        *table,
        "",
        "Fitted model t = a N^alpha D^beta (logreg: per L-BFGS iteration, times the measured iterations;"
        " the self-check refits on N <= 25k):",
        "",
        *model,
        "",
        f"Self-check (all kinds at N = 50k, both D, predicted from N <= 25k): "
        f"**{selfcheck:.1f} %** error (target <= 25 %).",
        "Evaluation (`evaluate_chunk`: one read per chunk, then per fit predict, metrics, prediction rows): "
        + "; ".join(f"{k} {v.describe()}" for k, v in evals.items())
        + f"; warehouse client `append_runs` {client_row.per_batch * 1e3:.1f} ms CPU per batch"
        f" + {client_row.per_row * 1e6:.2f} us per prediction row.",
        f"Memory: a knn chunk (fractions 1.0 and 0.25) then a logreg chunk peaked at {memory['peak_gb']:.2f} GB RSS "
        f"({memory['base_gb']:.2f} GB after imports; {memory['ratio']:.2f}x the analytic bytes).",
        f"k-NN: {knn_old:.2f} s (previous float64 brute force) vs {knn_new:.2f} s (float32 search + "
        f"float64 re-rank) for {n_queries} queries, one thread: **{knn_old / knn_new:.2f}x**, "
        f"identical neighbours.",
        "",
        "```",
        *proj.lines,
        "```",
        "",
        *targets_table(result, proj),
        "",
        f"Benchmark wall time {wall / 60:.1f} min.",
        "",
        END,
    ]
    replace_block(path, block)


def times_table(measured) -> list[str]:
    """Markdown: the CPU seconds of every kind at every measured (N, D)."""
    kinds = list(measured)
    table = ["| N | D | " + " | ".join(kinds) + " |", "|---:|---:|" + "---:|" * len(kinds)]
    for i, (n, d, _) in enumerate(measured[kinds[0]]):
        cells = [
            f"{measured[k][i][2] * 1e3:.2f} ms/query" if k == "knn" else f"{measured[k][i][2]:.2f} s" for k in kinds
        ]
        table.append(f"| {n:,} | {d} | " + " | ".join(cells) + " |")
    return table


def model_table(models, check, kinds: list[str]) -> list[str]:
    """Markdown: each kind's fitted model and its self-check."""
    model = [
        "| kind | model (all points) | N=50k predicted from the N<=25k model vs measured |",
        "|---|---|---:|",
    ]
    for k in kinds:
        model.append(
            f"| {k} | {models[k].describe()} | "
            f"{check[k][0]:.3g} vs {check[k][1]:.3g} ({100 * (check[k][0] / check[k][1] - 1):+.1f} %) |"
        )
    return model


def targets_table(result, proj: Projection) -> list[str]:
    """Markdown: each target, its projection, and what stops it when not met."""
    rows = ["| target | projected | met? |", "|---|---:|---|"]
    for key, target in (("new_encoder_16core_hours", 1.0), ("full_grid_8workers_hours", 4.0), ("peak_worker_gb", 8.0)):
        ok = result[key] <= target
        rows.append(
            f"| {key} <= {target:g} | {result[key]:.2f} | {'met' if ok else 'not met: ' + proj.blockers[key]} |"
        )
    return rows


def replace_block(path: Path, block: list[str]) -> None:
    """Put the generated block between its markers in `path` (appended when they are missing)."""
    text = path.read_text()
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + "\n".join(block) + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip() + "\n\n" + "\n".join(block) + "\n"
    path.write_text(text)
