"""The paper's baselines on the same plumbing as SMAC (docs/baselines.md): state SACBaseline, TD3, SACFlow, SACMoE
(their shared policy-SAC learner in ``policy_sac``), pixel SLAC and Dreamer (the reference code's DreamerV1)."""
