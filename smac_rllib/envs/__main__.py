"""``python -m smac_rllib.envs --list``: print every registered env name, one per line."""

from __future__ import annotations

import argparse

from smac_rllib.envs.registry import ENV_CONFIG_KEYS, env_names


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m smac_rllib.envs", description="DeepMind Control envs for RLlib")
    parser.add_argument("--list", action="store_true", help="print all env names (dmc/<domain>-<task>)")
    args = parser.parse_args(argv)
    if not args.list:
        parser.print_help()
        print(f"\nenv_config keys: {', '.join(ENV_CONFIG_KEYS)}")
        return
    print("\n".join(env_names()))


if __name__ == "__main__":
    main()
