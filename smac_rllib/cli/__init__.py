"""The ``rllib`` console script: ``rllib train file X.yaml``, ``rllib evaluate CKPT``, ``rllib plot DIR``.

Ray removed its own ``rllib`` CLI in 2.42; this one brings the tuned-example workflow back for this package.

  main.py             argument parsing, the process environment (set before Ray is imported), exit codes
  other_forms.py      arguments other tools take (older RLlib/Tune flags, split values, typographic dashes) -> ours
                      other_keys.py: config keys of other codebases and older RLlib -> ours (unknown_keys.py
                      says what a key that is no setting here is instead)
  errors.py           ``UserError``: a mistake the user can fix, printed as one line (exit code 2); ``warn``
  yaml_reader.py      reading the YAML file: 1.2 floats, line numbers, size / depth / alias limits, merge keys
                      and ``.name`` / ``x-name`` templates as in CI and compose files
  yaml_errors.py      what a YAML syntax error means, said as its fix (and where the mistake is, not where PyYAML stops)
  yaml_text.py        the file's text before YAML reads it: the path, the bytes (a pipe read once), pasted characters
  yaml_loader.py      tuned-example YAML -> ``ExperimentSpec`` (experiment_spec.py; every grid point built)
  experiment_parts.py an experiment's stop, checkpoint_config, wandb and scheduler blocks
  checks.py           config keys and value types, with close-match suggestions (env, env_config: env_checks.py;
                      env_config values that build here but not in the run: env_config_values.py)
  ranges.py           numeric ranges, NaN/inf, settings that depend on each other (plus each algorithm's own,
                      asked through ``smac_rllib.algorithms.config_questions``: cli/ names no algorithm)
  grids.py            ``grid_search`` at any depth: every point expanded and counted
  trial_check.py      each distinct trial as it will run: nested keys, its envs built once (trial_envs.py, with
                      what follows from their spaces), its module on meta (trial_module.py, the evaluation's
                      module against the trained one); same_trials.py: no two trials of a sweep
                      the same run (automatic values, switched-off keys, RLlib's evaluation keys without evaluation)
  horizon.py          settings measured against the stop and the task (warm-up, evaluation, batch, returns);
                      tune_horizon.py: the ASHA scheduler and the checkpoints against the stop and the evaluations
                      update_budget.py: what the run's updates amount to (CPU ratios, a warm-up most of the run)
  memory.py           the learner's and the replay's memory, estimated before Ray starts; checkpoint_disk.py: the
                      kept checkpoints (each holds the replay) against the free disk
  resources.py        what a trial asks for vs what the machine/cluster has (GPU -> CPU fallback, never PENDING)
  train.py            runs the experiments with Ray Tune (checkpoints, --resume, schedulers); preflight.py says
                      what will run (--dry-run, warnings), ray_start.py starts or joins Ray
  storage.py          where results go (every form checked alike), what --resume continues (before Ray starts);
                      resume_stop.py: a resumed run stops by the file's stop, raised ones continue finished trials
  ray_output.py       what Ray and Tune print that the user cannot act on, kept in their logs
  interrupt.py        Ctrl-C: checkpoint every running trial at the end of its iteration, then stop
  wandb_logging.py    W&B logging (short config, offline without a key, the key out of Ray's logs)
  wandb_key.py        where the W&B server is and whether `wandb login` stored a key for it (no Ray import)
  results.py          reading Tune's results (keys, result.json, params.json) and the shared number formats
  progress.py         one line per training iteration (live.py: the running iteration's); summary.py: the end
  checkpoints.py      atomic checkpoints and the ``--resume`` staging cleanup
  evaluate.py         deterministic evaluation of a checkpoint, optional mp4 (evaluate_callbacks.py: its frames and
                      the progress of a long evaluation)
  plot.py             learning curves from Tune results: mean and 95% interval over seeds
"""
