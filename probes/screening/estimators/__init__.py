"""The built-in transferability estimators: each module here registers its estimator on import
(`probes.screening.registry` imports every one of them on the registry's first lookup), so a new
built-in estimator is one new module in this folder. A third-party estimator registers from its
own package (entry-point group `crsbench.screen_estimators`)."""
