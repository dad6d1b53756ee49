"""toolgym: small tool-use tasks a tiny model can learn on a CPU (the training recipes' evidence ground).

    env = make("toolgym/lookup", seed=3)   # ask a color, look it up, answer
    env = make("toolgym/echo", seed=3)     # say a word
    env = make("toolgym/guess", seed=3)    # find the secret word from the reward alone
    env = make("toolgym/chain", seed=3)    # owner -> lookup -> answer, each step built on the last

See world.py for tasks, rewards and episode end. The recipes train on one range of seeds and report on
another (held-out) range; every seed is a different set of facts.
"""

from __future__ import annotations

from environments.core import TaskSpec
from environments.meta import EnvMeta
from environments.registry import register, register_env
from environments.toolgym.anchors import ExpertPolicy
from environments.toolgym.env import ToolGymEnv
from environments.toolgym.world import COMPONENTS

TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        env="toolgym",
        key="lookup",
        split="train",
        description="Find the asked item's color with lookup, then answer with it.",
        horizon="2 calls",
        pass_threshold=1.0,
        spec={"max_calls": 4},
    ),
    TaskSpec(
        env="toolgym",
        key="echo",
        split="train",
        description="Say the asked word with the say tool.",
        horizon="1 call",
        pass_threshold=1.0,
        spec={"max_calls": 2},
    ),
    TaskSpec(
        env="toolgym",
        key="guess",
        split="train",
        description="Guess the secret word with the say tool; only the reward tells you whether you were right.",
        horizon="1 call",
        pass_threshold=1.0,
        spec={"max_calls": 2},
    ),
    TaskSpec(
        env="toolgym",
        key="chain",
        split="train",
        description="Find the asked person's thing with owner, look up its color, then answer with it.",
        horizon="3 calls",
        pass_threshold=1.0,
        spec={"max_calls": 5},
    ),
)

for _task in TASKS:
    register(_task, ToolGymEnv)
# Batch-only for the lab (no demo, no human play); the expert is its anchor, and the default of pivotal search
# (environments.diagnosis.pivotal, PivotOPD's pivot finder).
register_env(
    EnvMeta(
        env="toolgym",
        anchors={"expert": lambda env, seed: ExpertPolicy()},
        default_anchor="expert",
        score_components=COMPONENTS,
        analyzer="environments.toolgym.analyzer:ToolGymAnalyzer",
    )
)
