"""The pre-screen's transferability estimators (METHODS.md §21): scores of an encoder's cached
train-split features against the labels, with no probe training. `registry` holds them,
`estimators/` the built-in ones (one module each), `score` the entry point for one cell."""
