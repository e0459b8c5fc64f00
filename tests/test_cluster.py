"""Cluster launch: the YAMLs in cluster/ pass Ray's offline validation, and on a real multi-node Ray cluster on
this machine (``ray.cluster_utils.Cluster``) SMAC places its learner and env runners by custom resources,
survives a killed env runner and a replaced rollout node, and runs a sweep with ``max_concurrent_trials``.

Cluster layout (as in cluster/aws.yaml, with custom resources standing in for the GPU):
  head    "learner" node  {CPU: 4, learner_node: 1}   driver, learner, trial drivers
  worker  "rollout" node  {CPU: 3, rollout_node: 1}   env runners
Nothing here contacts another host: every node is a set of processes on this machine.
"""

from __future__ import annotations

import copy
import glob
import itertools
import os
import re
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CLUSTER_YAMLS = sorted(glob.glob(str(ROOT / "cluster" / "*.yaml")))
CLUSTER_EXAMPLES = sorted(glob.glob(str(ROOT / "tuned_examples" / "cluster_*.yaml")))
ENV = "dmc/cartpole-balance"
LEARNER_RESOURCE, ROLLOUT_RESOURCE = "learner_node", "rollout_node"
GL_PACKAGES = ("libegl1", "libegl-mesa0", "libgl1-mesa-dri")


# --------------------------------------------------------------------------------------------- YAML checks
# What `ray up` runs first: prepare_config (defaults, setup-command merge, min/max workers) + validate_config.


def prepared(path: str) -> dict:
    from ray.autoscaler._private.util import prepare_config

    with open(path) as f:
        return prepare_config(yaml.safe_load(f))


def cluster_config_errors(config: dict) -> list[str]:
    """Every problem Ray's ``validate_config`` would raise, all at once (it stops at the first one).

    The JSON-schema part runs with ``iter_errors`` over Ray's own schema; the cross-field checks repeat
    ``validate_config``'s (head_node_type, the sum of min_workers).
    """
    import json

    import jsonschema

    import ray.autoscaler

    with open(os.path.join(os.path.dirname(ray.autoscaler.__file__), "ray-schema.json")) as f:
        schema = json.load(f)
    errors = [
        f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
        for e in sorted(
            jsonschema.Draft7Validator(schema).iter_errors(config), key=lambda e: list(map(str, e.absolute_path))
        )
    ]
    node_types = config.get("available_node_types")
    if isinstance(node_types, dict):
        head = config.get("head_node_type")
        if head is None:
            errors.append("head_node_type: required when available_node_types is set")
        elif head not in node_types:
            errors.append(f"head_node_type: {head!r} is not one of available_node_types {sorted(node_types)}")
        min_workers = sum(
            t.get("min_workers", 0)
            for t in node_types.values()
            if isinstance(t, dict) and isinstance(t.get("min_workers", 0), int)
        )
        max_workers = config.get("max_workers")
        if isinstance(max_workers, int) and min_workers > max_workers:
            errors.append(f"max_workers: {max_workers} is smaller than the sum of min_workers ({min_workers})")
    return errors


@pytest.mark.parametrize("path", CLUSTER_YAMLS, ids=os.path.basename)
def test_cluster_yaml_passes_rays_offline_validation(path):
    from ray.autoscaler._private.util import validate_config

    config = prepared(path)
    validate_config(config)  # raises on the first problem
    assert cluster_config_errors(config) == []


def test_there_is_a_yaml_for_aws_gcp_and_onprem():
    assert {os.path.basename(p) for p in CLUSTER_YAMLS} >= {"aws.yaml", "gcp.yaml", "onprem.yaml"}


def test_broken_copy_reports_all_its_errors():
    from ray.autoscaler._private.util import validate_config

    broken = yaml.safe_load(open(ROOT / "cluster" / "aws.yaml"))
    broken["max_workers"] = "ten"  # wrong type
    broken["available_node_types"]["rollout_cpu_spot"]["resources"]["rollout_node"] = 0.5  # resources are integers
    broken["available_node_types"]["rollout_cpu_ondemand"]["min_workers"] = 20
    del broken["available_node_types"]["rollout_cpu_spot"]["node_config"]  # required
    broken["available_node_types"]["head_gpu_learner"]["instance_type"] = "g5.xlarge"  # unknown key
    broken["head_node_type"] = "head_gpu"  # not a node type
    broken["setup_commands"] = "pip install ."  # must be a list

    with pytest.raises(jsonschema.ValidationError):  # what `ray up` shows: only the first problem
        validate_config(copy.deepcopy(broken))
    errors = cluster_config_errors(broken)
    expected = [
        r"^max_workers: 'ten' is not of type 'integer'",
        r"^available_node_types\.rollout_cpu_spot\.resources\.rollout_node: 0\.5 is not of type 'integer'",
        r"^available_node_types\.rollout_cpu_spot: 'node_config' is a required property",
        r"^available_node_types\.head_gpu_learner: Additional properties are not allowed \('instance_type' was "
        r"unexpected\)",
        r"^setup_commands: 'pip install \.' is not of type 'array'",
        r"^head_node_type: 'head_gpu' is not one of available_node_types",
    ]
    for pattern in expected:
        assert any(re.search(pattern, e) for e in errors), f"{pattern!r} not in {errors}"
    assert len(errors) == len(expected), errors  # min_workers 21 > max_workers 'ten' is not comparable: no extra error

    broken["max_workers"] = 10
    assert any(
        re.search(r"^max_workers: 10 is smaller than the sum of min_workers \(20\)", e)
        for e in cluster_config_errors(broken)
    )


# --------------------------------------------------------------------------------------------- least privilege

ACCESS_SH = ROOT / "cluster" / "access.sh"
BROAD_GRANTS = (
    "AmazonEC2FullAccess",
    "AmazonS3FullAccess",
    "AdministratorAccess",
    "roles/compute.admin",
    "roles/storage.admin",
    "roles/storage.objectAdmin",
    "roles/owner",
    "roles/editor",
)


def _values(node) -> list:
    """Every scalar of a parsed YAML/JSON document (comments are not values)."""
    if isinstance(node, dict):
        return [v for k, x in node.items() for v in [k, *_values(x)]]
    if isinstance(node, list):
        return [v for x in node for v in _values(x)]
    return [node]


@pytest.mark.parametrize("path", CLUSTER_YAMLS, ids=os.path.basename)
def test_no_open_ssh_and_no_broad_grants(path):
    values = [str(v) for v in _values(prepared(path))]
    assert not [v for v in values if "0.0.0.0/0" in v or v.strip() == "::/0"], "nothing may be open to the internet"
    assert not [v for v in values if any(g in v for g in BROAD_GRANTS)]


def test_aws_ray_creates_neither_its_open_security_group_nor_its_full_access_role():
    """Ray's AWS bootstrap creates a security group with SSH from 0.0.0.0/0 for every node type without
    SecurityGroupIds, and the role ray-autoscaler-v1 (EC2FullAccess + S3FullAccess) when the head has no
    IamInstanceProfile: both are named here, created by cluster/access.sh with SSH_CIDR."""
    import ray.autoscaler

    ray_aws = Path(ray.autoscaler.__file__).parent / "_private" / "aws" / "config.py"  # needs boto3 to import
    assert '"IpRanges": [{"CidrIp": "0.0.0.0/0"}]' in ray_aws.read_text(), "what Ray's own group would open"
    config = prepared(str(ROOT / "cluster" / "aws.yaml"))
    types_ = config["available_node_types"]
    assert all(t["node_config"].get("SecurityGroupIds") for t in types_.values()), (
        "a node type would get Ray's open group"
    )
    head = types_[config["head_node_type"]]["node_config"]
    assert head["IamInstanceProfile"] == {"Name": "smac-rllib-head"}
    assert all("IamInstanceProfile" not in t["node_config"] for n, t in types_.items() if n != config["head_node_type"])


def test_aws_policy_is_scoped_to_the_cluster_and_the_results_prefix():
    import json

    policy = json.loads((ROOT / "cluster" / "iam" / "aws_policy.json").read_text())
    statements = policy["Statement"]
    actions = [a for st in statements for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])]
    assert not [a for a in actions if a.endswith("*")], "no wildcard actions"
    assert all(st["Effect"] == "Allow" for st in statements)
    for st in statements:  # every write is limited to this cluster's instances or the results prefix
        writes = [
            a
            for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])
            if not a.split(":")[1].startswith(("Describe", "List", "Get"))
        ]
        if writes and st["Resource"] == "*":
            raise AssertionError(f"{st['Sid']}: {writes} on every resource")
    by_sid = {st["Sid"]: st for st in statements}
    assert by_sid["AutoscalerManagesOnlyThisClustersInstances"]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/ray-cluster-name": "smac-rllib"}
    }
    assert by_sid["ResultsAndCheckpoints"]["Resource"] == "arn:aws:s3:::YOUR_BUCKET/smac/*"
    assert yaml.safe_load((ROOT / "cluster" / "aws.yaml").read_text())["cluster_name"] == "smac-rllib"  # the tag value


def test_gcp_nodes_run_as_least_privilege_accounts_and_workers_have_no_public_ip():
    config = prepared(str(ROOT / "cluster" / "gcp.yaml"))
    types_ = config["available_node_types"]
    head = types_[config["head_node_type"]]["node_config"]
    assert [a["email"] for a in head["serviceAccounts"]] == ["smac-rllib-head@YOUR_PROJECT_ID.iam.gserviceaccount.com"]
    assert head["networkInterfaces"][0]["accessConfigs"], "the head is reached over SSH"
    assert "smac-rllib-head" in head["tags"]["items"]  # the SSH firewall rule's target
    for name, node_type in types_.items():
        if name == config["head_node_type"]:
            continue
        assert node_type["node_config"]["serviceAccounts"] == [], f"{name} runs as no service account"
        interfaces = node_type["node_config"]["networkInterfaces"]
        assert interfaces and all(not i.get("accessConfigs") for i in interfaces), f"{name} has an external IP"
    role = yaml.safe_load((ROOT / "cluster" / "iam" / "gcp_autoscaler_role.yaml").read_text())
    permissions = role["includedPermissions"]
    assert permissions and all(p.startswith("compute.") and "*" not in p for p in permissions)
    assert not [
        p for p in permissions if p.startswith(("compute.firewalls", "compute.networks.", "compute.projects.setCommon"))
    ]


def _access(provider: str, **env: str):
    import subprocess

    full = {k: v for k, v in os.environ.items() if k not in ("SSH_CIDR", "BUCKET", "PROJECT")}
    full.update(env)
    return subprocess.run(
        ["bash", str(ACCESS_SH), provider, "--dry-run"], capture_output=True, text=True, env=full, timeout=30
    )


@pytest.mark.parametrize("cidr, why", [
    (None, "set SSH_CIDR"), ("0.0.0.0/0", "opens SSH to 4294967296 addresses"), ("10.0.0.0/8", "opens SSH to 16777216"),
    ("203.0.113.300/32", "not an address byte"), ("my-laptop", "is not an IPv4 CIDR"),
    ("203.0.113.7/33", "prefix must be <= 32"),
])  # fmt: skip
def test_access_script_requires_a_narrow_ssh_cidr(cidr, why):
    env = {"BUCKET": "my-bucket", "PROJECT": "p"} | ({"SSH_CIDR": cidr} if cidr else {})
    for provider in ("aws", "gcp"):
        proc = _access(provider, **env)
        assert proc.returncode == 2 and why in proc.stderr, proc.stderr
        assert "authorize-security-group-ingress" not in proc.stdout and "firewall-rules" not in proc.stdout


def test_access_script_opens_ssh_to_the_given_cidr_only():
    aws = _access("aws", SSH_CIDR="203.0.113.7/32", BUCKET="my-bucket")
    assert aws.returncode == 0, aws.stderr
    (ssh,) = [line for line in aws.stdout.splitlines() if "--port 22" in line]
    assert "--cidr 203.0.113.7/32" in ssh
    assert "0.0.0.0" not in aws.stdout and "FullAccess" not in aws.stdout
    assert "arn:aws:s3:::my-bucket/smac/*" in aws.stdout  # the policy with the user's bucket
    gcp = _access("gcp", SSH_CIDR="203.0.113.7/32", BUCKET="my-bucket", PROJECT="my-project")
    assert gcp.returncode == 0, gcp.stderr
    (ssh,) = [line for line in gcp.stdout.splitlines() if "tcp:22" in line]
    assert "--source-ranges 203.0.113.7/32" in ssh and "--target-tags smac-rllib-head" in ssh
    assert (
        "gs://my-bucket --member serviceAccount:smac-rllib-head@my-project.iam.gserviceaccount.com --role "
        "roles/storage.objectAdmin" in gcp.stdout
    )
    assert "projects add-iam-policy-binding" in gcp.stdout and "roles/compute.admin" not in gcp.stdout
    (project_binding,) = [line for line in gcp.stdout.splitlines() if "projects add-iam-policy-binding" in line]
    assert "projects/my-project/roles/smacRllibAutoscaler" in project_binding, (
        "project-wide: the custom compute role only"
    )


def _start_commands(config: dict) -> tuple[list[str], list[str]]:
    return config["head_start_ray_commands"], config["worker_start_ray_commands"]


def _setup_commands(config: dict) -> dict[str, list[str]]:
    """Setup commands per node type, as the node updater picks them (a node type's own list wins)."""
    out = {}
    for name, node_type in config["available_node_types"].items():
        if name == config["head_node_type"]:
            out[name] = config["head_setup_commands"]
        else:
            out[name] = node_type.get("worker_setup_commands", config["worker_setup_commands"])
    return out


@pytest.mark.parametrize("path", CLUSTER_YAMLS, ids=os.path.basename)
def test_every_node_renders_with_egl_authenticates_and_installs_the_project(path):
    config = prepared(path)
    head_start, worker_start = _start_commands(config)
    head_ray = next(c for c in head_start if "ray start" in c)
    worker_ray = next(c for c in worker_start if "ray start" in c)
    for command in (head_ray, worker_ray):
        assert "MUJOCO_GL=egl" in command  # before any worker imports dm_control (docs/design.md §4)
        assert "RAY_AUTH_MODE=token" in command  # token authentication stays on
        assert "0.0.0.0" not in command  # the dashboard is reached by `ray dashboard` port-forwarding only
    assert "LP_NUM_THREADS=1" in worker_ray  # one llvmpipe thread per CPU env runner
    assert "--dashboard-host=127.0.0.1" in head_ray
    for name, commands in _setup_commands(config).items():
        text = "\n".join(commands)
        assert all(p in text for p in GL_PACKAGES), f"{name} misses a GL package"
        assert re.search(r"pip install .*smac_rllib|make setup", text), f"{name} does not install the project"
    assert config["file_mounts"].get("~/.ray/auth_token") == "~/.ray/auth_token"


@pytest.mark.parametrize("path", [p for p in CLUSTER_YAMLS if "onprem" not in p], ids=os.path.basename)
def test_cloud_node_types_declare_the_placement_resources(path):
    config = prepared(path)
    types_ = config["available_node_types"]
    head = types_[config["head_node_type"]]["resources"]
    assert head.get("GPU", 0) >= 1 and head.get(LEARNER_RESOURCE) == 1 and ROLLOUT_RESOURCE not in head
    workers = [t["resources"] for n, t in types_.items() if n != config["head_node_type"]]
    assert workers and all(r.get(ROLLOUT_RESOURCE) == 1 and r.get("CPU", 0) > 0 and not r.get("GPU") for r in workers)
    assert any(
        t.get("node_config", {}).get("InstanceMarketOptions")
        or t.get("node_config", {}).get("scheduling", {}).get("provisioningModel") == "SPOT"
        for t in types_.values()
    ), "an autoscaled spot worker type"


def test_onprem_gives_the_placement_resources_to_ray_start():
    head_start, worker_start = _start_commands(prepared(str(ROOT / "cluster" / "onprem.yaml")))
    assert any('--resources=\'{"learner_node": 1}\'' in c for c in head_start)
    assert any('--resources=\'{"rollout_node": 1}\'' in c for c in worker_start)


SECRET_PATTERNS = {
    "AWS access key id": r"AKIA[0-9A-Z]{16}",
    "private key": r"BEGIN [A-Z ]*PRIVATE KEY",
    "a key value": r"(?i)(api_key|secret_access_key|auth_token|password|WANDB_API_KEY)"
    r"\s*[:=]\s*['\"]?[A-Za-z0-9/+]{16,}",
}


@pytest.mark.parametrize(
    "path",
    CLUSTER_YAMLS
    + [str(ROOT / "cluster" / "README.md"), str(ACCESS_SH)]
    + sorted(glob.glob(str(ROOT / "cluster" / "iam" / "*")))
    + CLUSTER_EXAMPLES,
    ids=os.path.basename,
)
def test_no_secrets_in_cluster_files(path):
    text = Path(path).read_text()
    for what, pattern in SECRET_PATTERNS.items():
        assert not re.search(pattern, text), f"{path} contains {what}"
    if path.endswith(".yaml"):
        assert "RAY_AUTH_MODE=disabled" not in text


@pytest.mark.parametrize("path", CLUSTER_EXAMPLES, ids=os.path.basename)
def test_cluster_tuned_examples_load_and_ask_for_the_cluster_resources(path):
    from smac_rllib.cli.yaml_loader import load_experiments

    import smac_rllib

    smac_rllib.register()
    for spec in load_experiments(path):  # every grid point validated, as `rllib train file` does
        for config in spec.configs:
            assert config.num_env_runners > 0 and config.custom_resources_per_env_runner.get(ROLLOUT_RESOURCE)
            learner_side = (
                config.custom_resources_for_main_process
                if config.num_learners == 0
                else config.custom_resources_per_learner
            )
            assert learner_side.get(LEARNER_RESOURCE), "the learner must ask for the learner node"
            assert config.num_gpus_per_learner > 0


# --------------------------------------------------------------------------------------------- multi-node Ray


def _node_ids(results) -> list[str]:
    return [r.get() if hasattr(r, "get") else r for r in results]


@pytest.fixture(scope="module")
def cluster():
    """A head ("learner") node and a worker ("rollout") node with different custom resources."""
    import ray
    from ray._common import utils as ray_utils
    from ray.cluster_utils import Cluster

    import smac_rllib

    previous_cpus = ray.cluster_resources().get("CPU") if ray.is_initialized() else None
    ray.shutdown()  # a plain local Ray of another test module
    address_file = ray_utils.get_ray_address_file(None)
    previous_address = Path(address_file).read_text() if os.path.exists(address_file) else None
    c = Cluster()
    try:
        c.add_node(num_cpus=4, resources={LEARNER_RESOURCE: 1}, include_dashboard=False)  # the head
        # Cluster() records its address for `ray.init()` without an address: put back what was there, so other
        # Ray programs on this machine keep starting their own instance instead of joining this test cluster.
        if previous_address is None:
            ray_utils.reset_ray_address()
        else:
            Path(address_file).write_text(previous_address)
        rollout = c.add_node(num_cpus=3, resources={ROLLOUT_RESOURCE: 1})
        ray.init(address=c.address, log_to_driver=False, configure_logging=False)
        smac_rllib.register()  # Tune's registry lives in the Ray job
        yield types.SimpleNamespace(cluster=c, rollout=rollout, head_id=c.head_node.node_id)
    finally:
        ray.shutdown()
        c.shutdown()
        if previous_address is not None:
            Path(address_file).write_text(previous_address)
        if previous_cpus is not None:  # leave Ray as the session fixture `ray_local` had it
            ray.init(num_cpus=int(previous_cpus), include_dashboard=False, log_to_driver=False, configure_logging=False)
            smac_rllib.register()  # into the new instance's registry


def placed_config(num_env_runners: int = 2):
    from smac_rllib.algorithms import SMACConfig

    return (
        SMACConfig()
        .environment(ENV, env_config={"seed": 0})
        .env_runners(
            num_env_runners=num_env_runners,
            num_cpus_per_env_runner=1,
            custom_resources_per_env_runner={ROLLOUT_RESOURCE: 0.01},
            rollout_fragment_length=50,
        )
        .learners(num_learners=1, num_cpus_per_learner=1, custom_resources_per_learner={LEARNER_RESOURCE: 0.01})
        .training(
            num_particles=4,
            latent_dim=4,
            hidden_dim=32,
            critic_hidden_dim=32,
            train_batch_size_per_learner=32,
            num_steps_sampled_before_learning_starts=100,
            updates_per_env_step=0.05,
        )
        .reporting(min_sample_timesteps_per_iteration=100)
        .fault_tolerance(restart_failed_env_runners=True, env_runner_health_probe_timeout_s=20)
        .debugging(seed=0)
    )


COUNTERS = (
    ("training_iteration",),
    ("env_runners", "num_env_steps_sampled_lifetime"),
    ("num_env_steps_sampled_lifetime",),
    ("num_updates_lifetime",),
)


def _counters(result: dict) -> dict:
    out = {}
    for path in COUNTERS:
        value = result
        for key in path:
            value = value.get(key, {}) if isinstance(value, dict) else {}
        out["/".join(path)] = value if isinstance(value, (int, float)) else None
    return out


def _train_through(algo, fault, *, until, timeout_s: float = 180) -> list[dict]:
    """Train; inject ``fault()`` while the first ``train()`` runs; keep training until ``until(result)``."""
    results = []
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(algo.train)
        time.sleep(1.0)
        fault()
        results.append(future.result())
    deadline = time.monotonic() + timeout_s
    while not until(results[-1]) and time.monotonic() < deadline:
        results.append(algo.train())
    return results


def _assert_counters_never_go_back(results: list[dict]) -> None:
    previous = None
    for result in results:
        counters = _counters(result)
        if previous is not None:
            for key, value in counters.items():
                if value is not None and previous[key] is not None:
                    assert value >= previous[key], f"{key} went back: {previous[key]} -> {value}"
        previous = counters


def _env_runner_nodes(algo) -> list[str]:
    import ray

    return algo.env_runner_group.foreach_env_runner(
        lambda r: ray.get_runtime_context().get_node_id(), local_env_runner=False
    )


class TestPlacedRun:
    """One SMAC run (2 env runners on the rollout node, 1 learner on the learner node) through three checks."""

    @pytest.fixture(scope="class")
    def placed_algo(self, cluster):
        algo = placed_config().build_algo()
        yield algo
        algo.stop()

    def test_learner_on_the_learner_node_env_runners_on_the_rollout_node(self, cluster, placed_algo):
        import ray

        results = [placed_algo.train() for _ in range(2)]
        assert results[-1]["env_runners"]["num_env_steps_sampled_lifetime"] >= 200
        assert results[-1]["num_updates_lifetime"] > 0
        runner_nodes = _env_runner_nodes(placed_algo)
        learner_nodes = _node_ids(
            placed_algo.learner_group.foreach_learner(lambda learner: ray.get_runtime_context().get_node_id())
        )
        print(
            f"\nplacement: head/learner node {cluster.head_id}, rollout node {cluster.rollout.node_id}; "
            f"env runners on {runner_nodes}, learner on {learner_nodes}"
        )
        assert runner_nodes == [cluster.rollout.node_id] * 2
        assert learner_nodes == [cluster.head_id]
        _assert_counters_never_go_back(results)

    def test_killed_env_runner_is_restarted_and_training_continues(self, cluster, placed_algo):
        import ray

        before = placed_algo.train()
        victim_id = placed_algo.env_runner_group.healthy_env_runner_ids()[0]
        victim = placed_algo.env_runner_group._worker_manager._actors[victim_id]  # noqa: SLF001 - the actor handle

        def healthy_again(result):
            ft = result["fault_tolerance"]
            return ft["num_remote_worker_restarts"] >= 1 and ft["num_healthy_workers"] == 2

        results = _train_through(placed_algo, lambda: ray.kill(victim, no_restart=False), until=healthy_again)
        results.append(placed_algo.train())  # and one more full iteration with both runners
        summary = [
            (r["training_iteration"], r["fault_tolerance"], r["env_runners"]["num_env_steps_sampled_lifetime"])
            for r in results
        ]
        print(f"\nenv runner {victim_id} killed during iteration {before['training_iteration'] + 1}: {summary}")
        assert healthy_again(results[-1]), summary
        _assert_counters_never_go_back([before] + results)
        assert (
            results[-1]["env_runners"]["num_env_steps_sampled_lifetime"]
            > before["env_runners"]["num_env_steps_sampled_lifetime"]
        )
        assert results[-1]["num_updates_lifetime"] > before["num_updates_lifetime"]
        assert _env_runner_nodes(placed_algo) == [cluster.rollout.node_id] * 2

    def test_rollout_node_removed_and_replaced_training_continues(self, cluster, placed_algo):
        before = placed_algo.train()
        restarts_before = before["fault_tolerance"]["num_remote_worker_restarts"]
        old_node = cluster.rollout

        def replace_node():
            cluster.cluster.remove_node(old_node)
            cluster.rollout = cluster.cluster.add_node(num_cpus=3, resources={ROLLOUT_RESOURCE: 1})

        def healthy_again(result):
            # >= 1 restart RLlib noticed: with async sampling a runner that had no request in flight when its node
            # went away is restarted by Ray itself, unnoticed (and gets the learner's weights at the next sync)
            ft = result["fault_tolerance"]
            return ft["num_remote_worker_restarts"] >= restarts_before + 1 and ft["num_healthy_workers"] == 2

        results = _train_through(placed_algo, replace_node, until=healthy_again)
        results.append(placed_algo.train())
        summary = [
            (r["training_iteration"], r["fault_tolerance"], r["env_runners"]["num_env_steps_sampled_lifetime"])
            for r in results
        ]
        print(f"\nrollout node {old_node.node_id} removed, replaced by {cluster.rollout.node_id}: {summary}")
        assert healthy_again(results[-1]), summary
        _assert_counters_never_go_back([before] + results)
        assert (
            results[-1]["env_runners"]["num_env_steps_sampled_lifetime"]
            > before["env_runners"]["num_env_steps_sampled_lifetime"]
        )
        assert _env_runner_nodes(placed_algo) == [cluster.rollout.node_id] * 2


def test_sweep_of_two_k_by_two_seeds_with_max_concurrent_trials(cluster, tmp_path):
    from ray import tune

    started, ended = {}, {}  # trial id -> time: concurrency from the trials' lifetimes, not from sampled steps

    class CountRunning(tune.Callback):
        def on_trial_start(self, iteration, trials, trial, **info):
            started[trial.trial_id] = time.monotonic()

        def on_trial_complete(self, iteration, trials, trial, **info):
            ended[trial.trial_id] = time.monotonic()

    config = (
        placed_config(num_env_runners=0)  # one process per trial: acting and learning in the trial driver
        .learners(num_learners=0, num_cpus_per_learner="auto", custom_resources_per_learner={})
        .resources(num_cpus_for_main_process=1, custom_resources_for_main_process={LEARNER_RESOURCE: 0.01})
        .training(num_steps_sampled_before_learning_starts=50)
        .reporting(min_time_s_per_iteration=3)  # trials last long enough to overlap (starts come ~1 s apart)
    )
    param_space = config.to_dict()
    param_space.update(num_particles=tune.grid_search([2, 4]), seed=tune.grid_search([0, 1]))
    tuner = tune.Tuner(
        "SMAC",
        param_space=param_space,
        tune_config=tune.TuneConfig(max_concurrent_trials=2),
        run_config=tune.RunConfig(
            storage_path=str(tmp_path), stop={"training_iteration": 1}, verbose=0, callbacks=[CountRunning()]
        ),
    )
    grid = tuner.fit()
    assert not grid.errors, grid.errors
    done = sorted((r.config["num_particles"], r.config["seed"]) for r in grid)
    assert done == [(2, 0), (2, 1), (4, 0), (4, 1)]
    assert all(
        r.metrics["training_iteration"] == 1 and r.metrics["env_runners"]["num_env_steps_sampled_lifetime"] > 0
        for r in grid
    )
    events = sorted([(t, 1) for t in started.values()] + [(t, -1) for t in ended.values()], key=lambda e: (e[0], e[1]))
    running = list(itertools.accumulate(delta for _, delta in events))  # trials alive after each start/end
    print(f"\nmost trials running at once: {max(running)} (the learner node has CPUs for 4)")
    assert len(started) == len(ended) == 4 and max(running) == 2
