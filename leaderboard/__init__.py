"""The pure domain of joust: types, the consistency rule, pairing plans and rating maths.

Nothing here does I/O, reads the environment or the clock, or uses global random state:
plain data in, plain data out, randomness passed in.
"""
