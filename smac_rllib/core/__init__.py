"""The paper's math as pure functions of tensors (no Ray, no nn.Module state): the marginal-entropy estimators
(Eqs. 6-8, antithetic MLMC), the world model's ELBO terms (Eq. 13), the distributions, and the optimizer helpers
(non-finite skip, global-norm clip). Nothing here imports from the rest of the package (docs/design.md §2)."""
