"""The CLI's command groups, one module each, registering onto `crsbench.cli.app.app`.

`crsbench --help` lists them without importing any (`crsbench.cli.lazy` reads their sources); a
module is imported when one of its commands runs. A new module here is a new command group.
"""
