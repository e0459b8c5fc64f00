"""The losses wired to the models: the critic and actor losses (Eqs. 9-12), the pixel update's forward pass and one
plain update step (``pixel_update.PixelUpdate``), and the Dreamer baseline's imagination and lambda-returns.
Imports ``core`` and ``models`` only (docs/design.md §2)."""
