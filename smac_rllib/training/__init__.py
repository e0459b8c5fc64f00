"""The plumbing every algorithm shares: the off-policy loop (sync and async), the async driver and learner (its stager
and update threads), the replay, the sample-to-insert rate limiter, the CUDA seeding settings, and the speed layer
(``fast_update/``: lean update, cached train mode, device metrics, captured update, behind the one switch).
Imports ``core``, ``models`` and ``objectives``, never ``algorithms`` (docs/design.md §2)."""
