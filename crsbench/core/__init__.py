"""The bottom of the flow: names and declarations every stage shares; imports nothing else from crsbench."""
