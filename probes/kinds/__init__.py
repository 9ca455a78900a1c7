"""The built-in probe kinds: each module here registers its probes on import (`probes.registry`
imports every one of them on the registry's first lookup), so a new built-in kind is one new
module in this folder. A third-party kind registers from its own package (entry-point group
`crsbench.probes`)."""
