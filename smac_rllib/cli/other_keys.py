"""Config keys of other codebases and of older RLlib -> what sets the same here (``unknown_keys.py`` says them)."""

_TEMPERATURE = (
    "the temperature alpha is always learned here, toward target_entropy (auto: -|A|), from initial_alpha "
    "(default 0.1); there is no fixed-alpha switch"
)
# Config keys of other SAC codebases (CleanRL, Stable-Baselines3, SpinningUp) -> what sets the same here.
OTHER_LIBRARY_KEYS = {
    "autotune": _TEMPERATURE,
    "alpha": _TEMPERATURE,
    "ent_coef": _TEMPERATURE,
    "learning_starts": "write num_steps_sampled_before_learning_starts",
    "start_steps": "write num_steps_sampled_before_learning_starts",
    "buffer_size": "write replay_buffer_config: {capacity: N}",
    "replay_size": "write replay_buffer_config: {capacity: N}",
    "batch_size": "write train_batch_size_per_learner",
    **dict.fromkeys(("discount", "discount_factor", "gamma_discount"), "write gamma (the discount, paper: 0.99)"),
    **dict.fromkeys(("K", "k", "num_latent_samples", "num_samples_latent"), "write num_particles (the paper's K)"),
    **dict.fromkeys(("z_dim", "latent_dimension", "latent_size"), "write latent_dim"),
    **dict.fromkeys(
        ("target_update_rate", "polyak_tau", "soft_update_tau", "soft_tau"),
        "write tau (the soft target update's rate; paper: 0.005)",
    ),
    **dict.fromkeys(
        ("replay_capacity", "capacity", "memory_size", "replay_buffer_size", "buffer_capacity"),
        "write replay_buffer_config: {capacity: N}",
    ),
    **dict.fromkeys(
        (
            "warmup_steps",
            "warmup",
            "random_steps",
            "num_seed_steps",
            "seed_steps",
            "init_steps",
            "initial_collect_steps",
            "exploration_steps",
            "random_exploration_steps",
            "num_random_steps",
            "start_timesteps",
            "start_training",
            "init_random_frames",
            "num_expl_steps",
            "update_after",
        ),
        "write num_steps_sampled_before_learning_starts (agent steps of uniform random actions)",
    ),  # fmt: skip
    **dict.fromkeys(
        ("frame_skip", "frameskip", "action_repeats", "frame_repeat"), "it is env_config: {action_repeat: N}"
    ),
    **dict.fromkeys(
        ("max_grad_norm", "clip_grad", "grad_norm_clip", "clip_grad_norm", "gradient_clip", "grad_clip_norm"),
        "write grad_clip (each optimizer's gradients clipped by their global norm)",
    ),
    "weight_decay": "the optimizers are Adam without weight decay (as SAC's); remove it",
    **dict.fromkeys(("adam_eps", "optimizer_eps", "adam_epsilon"), "Adam's epsilon is not a setting here; remove it"),
    **dict.fromkeys(
        ("activation", "activation_fn", "act_fn", "nonlinearity"),
        "the networks' activations are not a setting here (docs/design.md lists the architecture); remove it",
    ),
    **dict.fromkeys(
        ("critic_target_update_freq", "critic_target_update_frequency", "target_update_freq", "target_update_period"),
        "write target_network_update_freq (env steps between target updates; with tau: soft updates)",
    ),
    **dict.fromkeys(
        (
            "actor_update_freq",
            "actor_update_frequency",
            "policy_update_freq",
            "policy_frequency",
            "actor_update_interval",
        ),
        "the actor is updated at every update here (SAC's and the paper's); TD3's delayed actor is run: TD3 with "
        "policy_delay",
    ),
    **dict.fromkeys(
        ("n_step_return", "nstep", "n_steps", "multi_step"),
        "the replay stores 1-step transitions (the paper's TD target); remove it",
    ),
    **dict.fromkeys(
        (
            "replay_ratio",
            "update_to_data_ratio",
            "updates_per_step",
            "gradient_steps",
            "train_every",
            "update_every_steps",
            "update_per_step",
            "optim_steps_per_batch",
        ),
        "write updates_per_env_step (gradient updates per env step)",
    ),
    "policy_lr": "write actor_lr",
    "pi_lr": "write actor_lr",
    "q_lr": "write critic_lr",
    "learning_rate": "write actor_lr and critic_lr (and alpha_lr for the temperature)",
    **dict.fromkeys(
        ("optimization_config", "actor_learning_rate", "critic_learning_rate", "entropy_learning_rate"),
        "RLlib's old-stack SAC rates (its optimization block, which the new stack never reads): write actor_lr, "
        "critic_lr and alpha_lr beside the other keys",
    ),
    "polyak": "write tau: 1 - polyak (polyak 0.995 -> tau: 0.005)",
    "total_timesteps": "the run's length is the stop: stop: {env_runners/num_env_steps_sampled_lifetime: N}",
    "gradient_steps": "write updates_per_env_step (gradient updates per env step stored)",
    "train_freq": "write updates_per_env_step (gradient updates per env step stored)",
    "update_every": "write updates_per_env_step (gradient updates per env step stored)",
    "utd_ratio": "write updates_per_env_step (gradient updates per env step stored)",
    "target_network_frequency": "write target_network_update_freq",
    "target_update_interval": "write target_network_update_freq (updates between target-network updates, with tau)",
    "entropy_coeff": _TEMPERATURE,
    **dict.fromkeys(
        ("policy_kwargs", "net_arch", "hidden_sizes", "ac_kwargs"),
        "size the networks with hidden_dim and critic_hidden_dim (num_hidden_layers for the depth)",
    ),
    "use_sde": "the policy explores by its own sampling (no state-dependent noise switch); remove it",
    "action_noise": "the policy explores by its own sampling; TD3 adds Gaussian noise (run: TD3, exploration_noise)",
    "tensorboard_log": "Tune writes TensorBoard files into each trial's directory: tensorboard --logdir <storage path>",
    "device": "a GPU learner is num_gpus_per_learner: 1 (0: the CPU)",
    **dict.fromkeys(
        ("eval_freq", "eval_interval", "test_interval", "eval_frequency", "evaluation_frequency", "eval_every"),
        "write evaluation_interval (in iterations)",
    ),
    **dict.fromkeys(
        (
            "n_eval_episodes",
            "num_test_episodes",
            "eval_episodes",
            "num_eval_episodes",
            "evaluation_episodes",
            "test_num",
            "episode_per_test",
        ),
        "write evaluation_duration (episodes)",
    ),
    **dict.fromkeys(
        ("init_temperature", "initial_temperature", "init_alpha", "alpha_init", "init_entropy_coef"),
        "write initial_alpha (the temperature's start; it is learned toward target_entropy)",
    ),
    **dict.fromkeys(
        ("reward_scale", "reward_scaling", "scale_reward"),
        "rewards are learned as the env gives them (DMC: in [0, 1] per step); there is no reward scale",
    ),
    **dict.fromkeys(
        ("epochs", "epoch", "steps_per_epoch", "step_per_epoch", "max_steps", "num_timesteps", "num_train_steps"),
        "the run's length is the stop: stop: {env_runners/num_env_steps_sampled_lifetime: N}",
    ),
    # TD3 (Fujimoto's and CleanRL's names), DrQ-v2, pytorch_sac, jaxrl, TorchRL, Tianshou
    "policy_noise": "TD3's target policy smoothing noise is target_noise (run: TD3; TD3: 0.2); SAC and SMAC have none",
    "noise_clip": "TD3's clip of its smoothing noise is target_noise_clip (run: TD3; TD3: 0.5)",
    "stddev_clip": "TD3's clip of its smoothing noise is target_noise_clip (run: TD3; TD3: 0.5)",
    "policy_freq": "TD3's delayed actor update is policy_delay (run: TD3; TD3: 2); SAC and SMAC update it every time",
    **dict.fromkeys(
        ("expl_noise", "act_noise", "stddev_schedule", "exploration_std"),
        "TD3's exploration noise is exploration_noise, a constant std (run: TD3; TD3: 0.1), with no schedule; SAC "
        "and SMAC explore by sampling their policy",
    ),
    "backup_entropy": "the TD target here always has the entropy term; td_entropy (SMAC) says which: marginal "
    "(Eq. 10) or conditional (Eq. 12)",
    **dict.fromkeys(("temp_lr", "temperature_lr", "alpha_learning_rate"), "write alpha_lr (the temperature's rate)"),
    "critic_tau": "write tau (the soft target update's rate; paper: 0.005)",
    **dict.fromkeys(
        ("actor_betas", "critic_betas", "alpha_betas", "log_std_bounds"),
        "not a setting here (Adam's betas and the log-std bounds are the paper's); remove it",
    ),
    "hidden_depth": "write num_hidden_layers",
    **dict.fromkeys(
        ("frames_per_batch", "step_per_collect"),
        "write min_sample_timesteps_per_iteration (env steps per iteration; the run's length is the stop)",
    ),
    "total_frames": "the run's length is the stop: stop: {env_runners/num_env_steps_sampled_lifetime: N} (agent "
    "steps: frames / action_repeat)",
    **dict.fromkeys(
        ("training_num", "env_per_collector", "num_envs"),
        "write num_envs_per_env_runner (envs per runner) or num_env_runners (sampling processes)",
    ),
    "estimation_step": "the replay stores 1-step transitions (the paper's TD target); remove it",
    # REDQ, CleanRL, SpinningUp, Stable-Baselines3, mixed precision
    **dict.fromkeys(
        ("num_critics", "n_critics", "num_qs", "num_q", "ensemble_size", "critic_ensemble_size"),
        "the critics here are always two (twin Q, the min of both in the target); there is no critic ensemble "
        "(REDQ's); remove it",
    ),
    **dict.fromkeys(
        ("deterministic", "deterministic_eval", "eval_deterministic"),
        "the deterministic policy (the mean action) is explore: false, written in evaluation_config: {explore: false}",
    ),
    **dict.fromkeys(
        ("torch_deterministic", "deterministic_torch", "reproducible"),
        "a reproducible run is seed: N with async_learning: false (the synchronous loop; acting and learning in one "
        "order); cuda_deterministic adds cuDNN's determinism on a GPU learner",
    ),
    **dict.fromkeys(
        ("max_ep_len", "max_episode_len", "max_episode_length", "episode_length", "max_path_length"),
        "an episode's limit is env_config: {time_limit: SECONDS} (dmc) or {max_episode_steps: N} (gymnasium)",
    ),
    **dict.fromkeys(
        ("n_envs", "num_parallel_envs", "envs_per_worker"),
        "write num_envs_per_env_runner (envs per runner) or num_env_runners (sampling processes)",
    ),
    **dict.fromkeys(
        ("save_freq", "save_interval", "save_every", "checkpoint_interval", "checkpoint_every"),
        "write checkpoint_config: {checkpoint_frequency: N} (iterations) beside config",
    ),
    **dict.fromkeys(
        ("log_interval", "log_freq", "log_every", "log_frequency"),
        "one result (a progress line, a row of progress.csv) comes per iteration, whose size is "
        "min_sample_timesteps_per_iteration (env steps)",
    ),
    **dict.fromkeys(
        ("mixed_precision", "fp16", "bf16", "amp", "use_amp", "precision", "use_mixed_precision"),
        "mixed precision is autocast (pixel runs: auto, bf16 on a GPU learner; fp16; off); state runs train in fp32",
    ),
}


# Settings of older RLlib that 2.60 no longer has -> what sets the same now.
REMOVED_KEYS = {
    **dict.fromkeys(
        ("horizon", "soft_horizon"),
        "an episode's limit is env_config time_limit (DMC, seconds) or max_episode_steps (gymnasium)",
    ),
    "no_done_at_end": "time limits are truncations already (the target bootstraps there)",
    "num_rollout_workers": "write num_env_runners",
    "num_envs_per_worker": "write num_envs_per_env_runner",
    "num_cpus_per_worker": "write num_cpus_per_env_runner",
    "num_gpus_per_worker": "write num_gpus_per_env_runner",
    "evaluation_num_workers": "write evaluation_num_env_runners",
    "create_env_on_local_worker": "write create_local_env_runner (with num_env_runners: 0 the local one samples)",
    "sample_async": "acting and learning overlap with async_learning: true (the default here)",
    **dict.fromkeys(
        ("timesteps_per_iteration", "min_sample_timesteps_per_reporting"), "write min_sample_timesteps_per_iteration"
    ),
    **dict.fromkeys(("min_iter_time_s", "min_time_s_per_reporting"), "write min_time_s_per_iteration (seconds)"),
    "min_train_timesteps_per_reporting": "write min_train_timesteps_per_iteration",
    "metrics_smoothing_episodes": "write metrics_num_episodes_for_smoothing",
    "collect_metrics_timeout": "write metrics_episode_collection_timeout_s",
    "evaluation_num_episodes": "write evaluation_duration (with evaluation_duration_unit: episodes)",
    "monitor": "record a trained policy with rllib evaluate CHECKPOINT --video eval.mp4",
    "replay_batch_size": "write train_batch_size_per_learner (transitions per update)",
    **dict.fromkeys(
        ("prioritized_replay", "prioritized_replay_alpha", "prioritized_replay_beta", "prioritized_replay_eps"),
        "RLlib's SAC and DQN take replay_buffer_config: {type: PrioritizedEpisodeReplayBuffer}; ours replay "
        "uniformly (the paper's)",
    ),
    "replay_mode": "the replay here is uniform over single-agent transitions; remove it",
    "input_evaluation": "this algorithm learns online and evaluates with evaluation_interval; remove it",
    "enable_async_evaluation": "write evaluation_parallel_to_training: true (with evaluation_num_env_runners >= 1)",
    **dict.fromkeys(
        ("Q_model", "policy_model"),
        "RLlib's old-stack SAC networks; RLlib's SAC now sizes both with model_config: {fcnet_hiddens: [256, 256]} "
        "(ours: hidden_dim and critic_hidden_dim)",
    ),
    "logger_config": "Tune logs each trial itself (result.json, progress.csv, TensorBoard in its directory); for W&B "
    "add a wandb: {project: NAME} block beside config (or pass --wandb)",
}
