"""The ``rllib`` console script: ``rllib train file X.yaml``, ``rllib evaluate CKPT``, ``rllib plot DIR``.

Ray removed its own ``rllib`` CLI in 2.42; this one brings the tuned-example workflow back for this package.

  main.py         argument parsing, the process environment (set before Ray is imported), exit codes
  errors.py       ``UserError``: a mistake the user can fix, printed as one line (exit code 2)
  yaml_loader.py  tuned-example YAML -> ``ExperimentSpec`` (run, stop, checkpoints, W&B, scheduler; validate())
  checks.py       env, env_config and config keys and value types, with close-match suggestions
  resources.py    what a trial asks for vs what the machine/cluster has (GPU -> CPU fallback, never PENDING)
  train.py        runs the experiments with Ray Tune (checkpoints, --resume, W&B, schedulers)
  progress.py     one line per training iteration, and the final summary
  evaluate.py     deterministic evaluation of a checkpoint, optional mp4
  plot.py         learning curves from Tune results: mean and 95% interval over seeds
"""
