"""crsbench: feature store and analysis warehouse for choosing medical image encoders."""

__version__ = "0.1.0"
