"""Judge providers, one module each, chosen by `workers.registry` from a "provider/model" spec.

Each module imports its SDK only when a judge is built, so importing the registry stays cheap
and a missing SDK fails the judge that needs it, not the whole worker.
"""
