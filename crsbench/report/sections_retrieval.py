"""The report's retrieval section: which encoder finds the most similar past cases, and does it still
when the query image is degraded? (METHODS.md §24)

Per dataset, the encoders' clean mAP@R at their best depth beside the share kept with corrupted
queries (analysis retrieval's summary), one plain sentence per dataset, and every metric at that
depth with its image-bootstrap interval (view retrieval_scores).
"""

from __future__ import annotations

from crsbench.reads.report_data import ReportData
from crsbench.reads.retrieval import retrieval_summary, retrieval_verdicts
from crsbench.report.html import FigureSink, bullet_list
from crsbench.report.sections import FILL, Missing, section
from crsbench.report.sections_curves import nullable_table

FILL["retrieval"] = "crsbench analyze retrieval"

SUMMARY_COLUMNS = ["dataset_id", "encoder_id", "depth", "relevance", "map_at_r", "map_at_r_corrupted", "retained",
                   "retrieval_rank"]  # fmt: skip


@section("retrieval", "Similar-case retrieval: does the encoder find comparable past cases?", order=145)
def retrieval(data: ReportData, sink: FigureSink) -> str | Missing:
    summary = retrieval_summary(data.wh)
    if summary.empty:
        return Missing("No retrieval stored.", FILL["retrieval"])
    out = [
        "<p>Each test image is a query; the train images are the gallery, ranked by the distance between the "
        "encoder's stored embeddings. mAP@R rewards ranking every relevant case (same label; for multilabel "
        "data, a shared finding) before the rest; corrupted queries are the stored perturbed test images "
        "against the same clean gallery.</p>",
        bullet_list(retrieval_verdicts(summary)),
        nullable_table(summary[SUMMARY_COLUMNS], data),
    ]
    scores = data.wh.sql(
        "select s.dataset_id, s.encoder_id, s.relevance, s.metric, s.value, s.ci_low, s.ci_high, s.n_queries "
        "from retrieval_scores s join analysis_retrieval_summary b on b.dataset_id = s.dataset_id "
        "and b.encoder_id = s.encoder_id and b.depth = s.depth where s.condition = 'clean' "
        "order by s.dataset_id, s.encoder_id, s.relevance, s.metric"
    )
    if len(scores):
        out.append("<p>Every metric of the clean queries at that depth, with 95 % image-bootstrap intervals:</p>")
        out.append(nullable_table(scores, data))
    return "".join(out)
