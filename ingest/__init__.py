"""crsbench.ingest: dataset adapters, splits and label fractions (METHODS.md §1).

    from crsbench.ingest import ingest, make_suite
    paths = make_suite(Path("suite"))
    ds = ingest("chexpert", paths["chexpert"], "chexpert", uncertainty="ones")

Adapters are registry entries (`ADAPTERS`); the built-in ones (the `adapter_*` modules)
register when the registry is first asked. `open_image(ds.root, rel_path)` reads any ingested
image.
"""

from crsbench.ingest.core import check_name, ingest
from crsbench.ingest.images import open_image
from crsbench.ingest.registry import ADAPTERS, AdapterEntry, AdapterOption, get_adapter, register_adapter
from crsbench.ingest.suite import make_suite
from crsbench.ingest.types import Dataset, Task

__all__ = [
    "ADAPTERS",
    "AdapterEntry",
    "AdapterOption",
    "Dataset",
    "Task",
    "check_name",
    "get_adapter",
    "ingest",
    "make_suite",
    "open_image",
    "register_adapter",
]
