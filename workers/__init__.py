"""Everything that calls a judge: providers, prompts, verdict parsing, the RQ jobs."""
