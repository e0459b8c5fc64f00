"""The plumbing every algorithm shares: the off-policy loop (sync and async), the replay, the sample-to-insert rate
limiter, the replay learner with its stager and update threads, and the speed layer (lean update, captured update).
Imports ``core``, ``models`` and ``objectives``, never ``algorithms`` (docs/design.md §2)."""
