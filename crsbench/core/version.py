"""The package version, recorded in every run record, feature set, panel and analysis."""

__version__ = "0.1.0"
