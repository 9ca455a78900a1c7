"""Package data: the warehouse view definitions, one view per .sql file, applied in file-name order."""
