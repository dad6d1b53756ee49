"""fedgym: three organisations' private variants of toolgym lookup (catalogue.py), for federated experience.

env = make("fedgym/a", seed=3)     # organisation a's catalogue; fedgym/b and fedgym/c hold other colors
"""

from __future__ import annotations

from environments.core import TaskSpec
from environments.fedgym.catalogue import COMPONENTS, ORGS, Catalogue, PrivateToolGymEnv, private_catalogue
from environments.meta import EnvMeta
from environments.registry import register, register_env
from environments.toolgym.anchors import ExpertPolicy

TASKS: tuple[TaskSpec, ...] = tuple(
    TaskSpec(
        env="fedgym",
        key=org,
        split="train",
        description=f"Find the asked item's color in organisation {org}'s catalogue with lookup, then answer with it.",
        horizon="2 calls",
        pass_threshold=1.0,
        spec={"max_calls": 4, "org": org},
    )
    for org in ORGS
)

for _task in TASKS:
    register(_task, PrivateToolGymEnv)
register_env(
    EnvMeta(env="fedgym", anchors={"expert": lambda env, seed: ExpertPolicy()}, default_anchor="expert", score_components=COMPONENTS)
)

__all__ = ["ORGS", "Catalogue", "PrivateToolGymEnv", "private_catalogue"]
