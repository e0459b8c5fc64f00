"""The state transition buffer: what goes in comes out as (x, a, r, x', terminated), uniformly, and survives a
checkpoint."""

import numpy as np
import pytest
from ray.rllib.core.columns import Columns
from ray.rllib.env.single_agent_episode import SingleAgentEpisode

from smac_rllib.training.replay import TransitionReplayBuffer


def chunk(start: int, num_steps: int, terminated: bool = False) -> SingleAgentEpisode:
    """Observation t is [t, -t]; action t is [t / 100]; reward t is t (so every transition is recognizable)."""
    t = np.arange(start, start + num_steps + 1, dtype=np.float32)
    return SingleAgentEpisode(
        observations=list(np.stack([t, -t], axis=1)),
        actions=list(t[:-1, None] / 100),
        rewards=list(t[:-1]),
        terminated=terminated,
        len_lookback_buffer=0,
    )


def test_transitions_pair_each_observation_with_its_successor_and_mark_only_true_terminals():
    buffer = TransitionReplayBuffer(capacity=100, seed=0)
    buffer.add([chunk(0, 5), chunk(5, 3, terminated=True), chunk(50, 4)])  # a truncated-looking chunk is not terminal
    assert len(buffer) == 12
    batch = buffer.sample(2000)
    t_N = batch[Columns.REWARDS]
    np.testing.assert_array_equal(batch[Columns.OBS][:, 0], t_N)
    np.testing.assert_array_equal(batch[Columns.NEXT_OBS][:, 0], t_N + 1)
    np.testing.assert_allclose(batch[Columns.ACTIONS][:, 0], t_N / 100, rtol=1e-6)
    np.testing.assert_array_equal(
        batch[Columns.TERMINATEDS], (t_N == 7).astype(np.float32)
    )  # last step of the terminated chunk
    assert set(np.unique(t_N)) == {0, 1, 2, 3, 4, 5, 6, 7, 50, 51, 52, 53}  # uniform over all 12
    counts = np.unique(t_N, return_counts=True)[1]
    assert counts.min() > 2000 / 12 * 0.6
    assert batch["n_step"].tolist() == [1.0] * 2000 and batch["weights"].tolist() == [1.0] * 2000


def test_ring_overwrites_the_oldest_transitions_once_full():
    buffer = TransitionReplayBuffer(capacity=10, seed=0)
    for start in range(0, 30, 3):
        buffer.add([chunk(start, 3)])
    assert len(buffer) == 10 and buffer.get_added_timesteps() == 30
    assert set(np.unique(buffer.sample(1000)[Columns.REWARDS])) == set(range(20, 30))
    arrays = dict(buffer._arrays)
    buffer.add([chunk(30, 3)])  # once full, adding writes in place: no reallocation (copy of the buffer) per add
    assert all(buffer._arrays[k] is arrays[k] for k in arrays)
    assert set(np.unique(buffer.sample(1000)[Columns.REWARDS])) == set(range(23, 33))
    buffer.add([chunk(100, 25)])  # a chunk longer than the capacity keeps its newest transitions
    assert set(np.unique(buffer.sample(1000)[Columns.REWARDS])) == set(range(115, 125))


def test_state_round_trip_keeps_contents_ring_position_and_sampling_stream():
    buffer = TransitionReplayBuffer(capacity=8, seed=3)
    buffer.add([chunk(0, 11)])
    restored = TransitionReplayBuffer(capacity=8)
    restored.set_state(buffer.get_state())
    np.testing.assert_array_equal(restored.sample(64)[Columns.OBS], buffer.sample(64)[Columns.OBS])
    buffer.add([chunk(20, 2)])
    restored.add([chunk(20, 2)])
    np.testing.assert_array_equal(restored.sample(64)[Columns.REWARDS], buffer.sample(64)[Columns.REWARDS])


def test_bad_input_names_the_fix():
    with pytest.raises(ValueError, match="capacity"):
        TransitionReplayBuffer(capacity=0)
    with pytest.raises(ValueError, match="learning_starts"):
        TransitionReplayBuffer().sample(4)
    pixels = SingleAgentEpisode(
        observations=[np.zeros((4, 4, 3))] * 2, actions=[np.zeros(1)], rewards=[0.0], len_lookback_buffer=0
    )
    with pytest.raises(ValueError, match="from_pixels"):
        TransitionReplayBuffer().add([pixels])
    with pytest.raises(ValueError, match="older smac_rllib"):
        TransitionReplayBuffer().set_state({"episodes": []})
