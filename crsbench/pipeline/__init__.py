"""The orchestration loops behind `crsbench.Bench`: each module runs one stage over many
encoders or datasets, holding the warehouse only as long as each write needs it.

The CLI and notebooks reach these through `crsbench.Bench`; they import only stages
below them (ingest, features, probes, warehouse) and crsbench.core.
"""
