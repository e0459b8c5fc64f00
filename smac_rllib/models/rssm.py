"""Recurrent state-space model (PlaNet / Dreamer-v1 RSSM), as in the SMAC reference code.

Legend for shape suffixes: K = particles, B = batch, T = time, A = action dim, E = embed dim,
S = stoch size, D = deter size, Hd = hidden size, F = S + D (feature dim).

A *state* is a plain dict of tensors with keys ``mean``, ``std``, ``stoch`` (S each) and ``deter`` (D):
the Gaussian belief over s_t, one sample ``stoch`` of it, and the GRU state. Plain dicts travel through
RLlib's STATE_OUT / tree.map_structure untouched.

Time convention (Dreamer v1): ``action_B_T_A[:, t]`` is the action taken BEFORE observation t, i.e. the
previous action a_{t-1} that led to x_t; it is zero at the start of an episode. ``is_first_B_T[:, t]``
marks x_t as the first observation of an episode: the previous state and action are then reset to the
zero initial state *inside* the step, so episode boundaries within a replayed sequence and on env
runners are handled here, in one place.

    prior  p(s_t | s_{t-1}, a_{t-1}):      deter_t = GRU(ELU(W [stoch_{t-1}, a_{t-1}]), deter_{t-1})
                                           (mean, std) = MLP(deter_t)
    post   q(s_t | s_{t-1}, a_{t-1}, x_t): (mean, std) = MLP([deter_t, embed_t])
    std = softplus(raw) + min_std
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["State", "RSSM", "stack_states"]

State = dict[str, torch.Tensor]
STATE_KEYS = ("mean", "std", "stoch", "deter")


def stack_states(states: list[State], dim: int) -> State:
    return {k: torch.stack([s[k] for s in states], dim=dim) for k in STATE_KEYS}


class RSSM(nn.Module):
    def __init__(
        self,
        action_dim: int,
        embed_dim: int,
        deter_size: int = 200,
        stoch_size: int = 30,
        hidden_size: int = 200,
        min_std: float = 0.1,
    ):
        super().__init__()
        self.deter_size, self.stoch_size, self.min_std = deter_size, stoch_size, min_std
        self.feat_dim = stoch_size + deter_size
        # Reference code module -> ours: fc_input -> img_in, cell -> gru, fc_prior -> prior_head,
        # fc_post[0] (one Linear on [deter, embed]) -> post_deter_in + post_embed_in (same parameter count;
        # split so the embedding projection runs once for all steps and is shared by all particles).
        self.img_in = nn.Sequential(nn.Linear(stoch_size + action_dim, hidden_size), nn.ELU())
        self.gru = nn.GRUCell(hidden_size, deter_size)
        self.prior_head = nn.Sequential(
            nn.Linear(deter_size, hidden_size), nn.ELU(), nn.Linear(hidden_size, 2 * stoch_size)
        )
        self.post_deter_in = nn.Linear(deter_size, hidden_size)
        self.post_embed_in = nn.Linear(embed_dim, hidden_size, bias=False)
        self.post_head = nn.Sequential(nn.ELU(), nn.Linear(hidden_size, 2 * stoch_size))

    # ----- single steps -------------------------------------------------------------------------------
    def initial_state(self, batch_size: int, device: torch.device | str | None = None) -> State:
        """All-zero state (Dreamer v1), each tensor (B, S) or (B, D)."""
        zeros = lambda n: torch.zeros(batch_size, n, device=device)  # noqa: E731
        S, D = self.stoch_size, self.deter_size
        return dict(mean=zeros(S), std=zeros(S), stoch=zeros(S), deter=zeros(D))

    def img_step(self, prev_state: State, prev_action_B_A: torch.Tensor) -> State:
        """Prior p(s_t | s_{t-1}, a_{t-1}) and one sample of it. No reset (see ``obs_step``)."""
        x_B_Hd = self.img_in(torch.cat([prev_state["stoch"], prev_action_B_A], dim=-1))
        deter_B_D = self.gru(x_B_Hd, prev_state["deter"])
        mean_B_S, std_B_S = self._gaussian(self.prior_head(deter_B_D))
        return dict(mean=mean_B_S, std=std_B_S, stoch=self._sample(mean_B_S, std_B_S), deter=deter_B_D)

    def obs_step(
        self,
        prev_state: State,
        prev_action_B_A: torch.Tensor,
        embed_B_E: torch.Tensor,
        is_first_B: torch.Tensor | None = None,
        noise_B_S: torch.Tensor | None = None,
    ) -> tuple[State, State]:
        """(posterior q(s_t | s_{t-1}, a_{t-1}, x_t), prior p(s_t | s_{t-1}, a_{t-1})), each a (B, ...) state.

        Where ``is_first_B`` (bool or 0/1) is set, ``prev_state`` and ``prev_action_B_A`` are first reset to
        zero (the initial state). ``None`` = no resets. ``noise_B_S``: the posterior's standard normal draw
        (default: drawn here). One step for acting; sequences go through ``observe`` / ``filter_posteriors``.
        """
        embed_proj_B_Hd = self.post_embed_in(embed_B_E)
        if is_first_B is not None:
            keep_B_1 = 1.0 - is_first_B.to(prev_action_B_A.dtype).unsqueeze(-1)
            prev_state = {k: v * keep_B_1 for k, v in prev_state.items()}
            prev_action_B_A = prev_action_B_A * keep_B_1
        prior = self.img_step(prev_state, prev_action_B_A)
        x_B_Hd = self.post_deter_in(prior["deter"]) + embed_proj_B_Hd
        mean_B_S, std_B_S = self._gaussian(self.post_head(x_B_Hd))
        stoch_B_S = (
            self._sample(mean_B_S, std_B_S) if noise_B_S is None else mean_B_S + std_B_S * noise_B_S.to(std_B_S.dtype)
        )
        post = dict(mean=mean_B_S, std=std_B_S, stoch=stoch_B_S, deter=prior["deter"])
        return post, prior

    def _gaussian(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, raw_std = x.chunk(2, dim=-1)
        return mean, F.softplus(raw_std) + self.min_std

    def _sample(self, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
        return mean + std * torch.randn_like(std)  # reparameterized sample

    # ----- sequences ----------------------------------------------------------------------------------
    def observe(
        self,
        embed_B_T_E: torch.Tensor,
        action_B_T_A: torch.Tensor,
        is_first_B_T: torch.Tensor | None = None,
        state: State | None = None,
        noise_B_T_S: torch.Tensor | None = None,
    ) -> tuple[State, State]:
        """Filter a sequence: (post, prior), each a state of (B, T, ...) tensors; the prior has no sample
        (``mean``, ``std``, ``deter``: what the KL of Eq. (13) needs).

        ``action_B_T_A[:, t]`` is the action taken BEFORE observation t (zero at episode start). ``state`` is
        the (B, ...) state before step 0 (default: zero initial state). ``noise_B_T_S``: the posterior's standard
        normal draws (default: drawn here, one ``randn`` for the whole sequence).
        """
        post = self.filter_posteriors(self.post_embed_in(embed_B_T_E), action_B_T_A, is_first_B_T, state, noise_B_T_S)
        mean_B_T_S, std_B_T_S = self._gaussian(
            self.prior_head(post["deter"])
        )  # p(s_t | h_t): once, on the stacked deters
        return post, dict(mean=mean_B_T_S, std=std_B_T_S, deter=post["deter"])

    def filter_posteriors(
        self,
        embed_proj_B_T_Hd: torch.Tensor,
        action_B_T_A: torch.Tensor,
        is_first_B_T: torch.Tensor | None,
        state: State | None = None,
        noise_B_T_S: torch.Tensor | None = None,
    ) -> State:
        """The posterior filter over a sequence, (B, T, ...) states, from the projected embeddings (``post_embed_in``).

        The same recurrence as a loop of ``obs_step`` (tests/test_world_model.py), with what does not depend on it
        computed once for the whole sequence (docs/design.md §10): the keep-masks of ``is_first``, the action part
        of the GRU input (``img_in``'s weight split into its stoch and action columns: the same parameters), and the
        noise; the prior head is left out (``observe`` applies it after the loop; the particles never need it).
        """
        B, T = action_B_T_A.shape[:2]
        if state is None:
            state = self.initial_state(B, action_B_T_A.device)
        if noise_B_T_S is None:
            noise_B_T_S = torch.randn(B, T, self.stoch_size, device=embed_proj_B_T_Hd.device)
        linear = self.img_in[0]
        keep_B_T_1 = None if is_first_B_T is None else 1.0 - is_first_B_T.to(action_B_T_A.dtype).unsqueeze(-1)
        if keep_B_T_1 is not None:
            action_B_T_A = action_B_T_A * keep_B_T_1  # a_{t-1} reset to zero where x_t starts an episode
        action_in_B_T_Hd = F.linear(
            action_B_T_A, linear.weight[:, self.stoch_size :], linear.bias
        )  # all steps, one matmul
        w_stoch_Hd_S = linear.weight[:, : self.stoch_size]  # one view (and one autocast cast) for all steps
        stoch_B_S, deter_B_D = state["stoch"], state["deter"]
        posts = []
        for t in range(T):
            keep_B_1 = None if keep_B_T_1 is None else keep_B_T_1[:, t]
            post = self.posterior_step(
                stoch_B_S,
                deter_B_D,
                action_in_B_T_Hd[:, t],
                embed_proj_B_T_Hd[:, t],
                noise_B_T_S[:, t],
                w_stoch_Hd_S,
                keep_B_1,
            )
            stoch_B_S, deter_B_D = post["stoch"], post["deter"]
            posts.append(post)
        return stack_states(posts, dim=1)

    def posterior_step(
        self, stoch_B_S, deter_B_D, action_in_B_Hd, embed_proj_B_Hd, noise_B_S, w_stoch_Hd_S, keep_B_1=None
    ) -> State:
        """One step of ``filter_posteriors``: reset, GRU on ``img_in([stoch, action])`` (its action part precomputed in
        ``action_in_B_Hd``, bias included; ``w_stoch_Hd_S`` = the stoch columns of ``img_in``'s weight), the posterior
        head, one reparameterized sample. The unit a regional ``torch.compile`` fuses
        (``smac_rllib.training.fast_update.captured_update.compile_rssm_step``)."""
        if keep_B_1 is not None:
            stoch_B_S, deter_B_D = stoch_B_S * keep_B_1, deter_B_D * keep_B_1
        x_B_Hd = F.elu(F.linear(stoch_B_S, w_stoch_Hd_S) + action_in_B_Hd)
        deter_B_D = self.gru(x_B_Hd, deter_B_D)
        mean_B_S, std_B_S = self._gaussian(self.post_head(self.post_deter_in(deter_B_D) + embed_proj_B_Hd))
        return dict(mean=mean_B_S, std=std_B_S, stoch=mean_B_S + std_B_S * noise_B_S.to(std_B_S.dtype), deter=deter_B_D)

    def observe_particles(
        self,
        embed_B_T_E: torch.Tensor,
        action_B_T_A: torch.Tensor,
        is_first_B_T: torch.Tensor | None,
        num_particles: int,
        state: State | None = None,
        noise_KB_T_S: torch.Tensor | None = None,
    ) -> State:
        """K independent posterior trajectories ("history" particles, reference code): a state of (K, B, T, ...).

        Same as ``observe`` on the inputs repeated K times along the batch, but the embedding projection is
        computed once and shared, and no prior. ``state`` (optional) is one (B, ...) state shared by all particles;
        ``noise_KB_T_S`` the posterior draws of the K*B rows, particle-major. Call under ``torch.no_grad()`` when the
        particles only feed the actor/critic (Alg. 2).
        """
        K, (B, T) = num_particles, action_B_T_A.shape[:2]
        repeat = lambda x: x.repeat(K, *([1] * (x.dim() - 1)))  # (B, ...) -> (K*B, ...), particle-major  # noqa: E731
        embed_proj_KB_T_Hd = repeat(self.post_embed_in(embed_B_T_E))
        is_first_KB_T = None if is_first_B_T is None else repeat(is_first_B_T)
        state_KB = None if state is None else {k: repeat(v) for k, v in state.items()}
        post = self.filter_posteriors(embed_proj_KB_T_Hd, repeat(action_B_T_A), is_first_KB_T, state_KB, noise_KB_T_S)
        return {k: v.reshape(K, B, T, *v.shape[2:]) for k, v in post.items()}

    def imagine(self, action_B_T_A: torch.Tensor, state: State) -> State:
        """Open-loop priors from ``state`` (B, ...) under ``action_B_T_A[:, t]`` = a_{t-1}: (B, T, ...)."""
        priors = []
        for t in range(action_B_T_A.shape[1]):
            state = self.img_step(state, action_B_T_A[:, t])
            priors.append(state)
        return stack_states(priors, dim=1)

    # ----- features and particles -----------------------------------------------------------------------
    @staticmethod
    def sample_stoch_particles(
        post: State, num_particles: int, noise_K_B_T_S: torch.Tensor | None = None
    ) -> torch.Tensor:
        """ "Step" particles: K fresh samples of s_t ~ q(s_t | h_t) around the shared deter, (K, *batch, S)."""
        mean, std = post["mean"], post["std"]
        if noise_K_B_T_S is None:
            noise_K_B_T_S = torch.randn(num_particles, *std.shape, device=std.device)
        return mean + std * noise_K_B_T_S.to(std.dtype)

    @staticmethod
    def get_feat(state: State) -> torch.Tensor:
        """cat(stoch, deter): (*batch, F). ``stoch`` may carry extra leading particle dims, e.g. (K, B, T, S)
        from ``sample_stoch_particles``; ``deter`` (B, T, D) is then broadcast."""
        stoch, deter = state["stoch"], state["deter"]
        deter = deter.expand(*stoch.shape[:-1], deter.shape[-1])
        return torch.cat([stoch, deter], dim=-1)
