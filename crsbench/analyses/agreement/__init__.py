"""Will the next encoder agree with this one? Representation agreement, classifier transfer and the
successor test (METHODS.md §17).
"""
