"""Package data: the warehouse SQL, one object per file: `macros/` (table and scalar macros,
named fn_*) then `views/`, each folder applied in file-name order."""
