"""Service desk: Kestrel Telecom's help desk, where the agent serves a simulated caller under a written policy.

Importing the package registers every task template as a task "servicedesk/<template>" (splits by template) and
declares what the lab needs (environments.meta): the `user` role slot with the rule-based caller as its default,
the anchors, the play page's panels, the attack axis. See README.md in this folder.
"""

from __future__ import annotations

import environments.servicedesk.templates_a  # noqa: F401  (each family of task templates registers into TEMPLATES)
import environments.servicedesk.templates_b  # noqa: F401
from environments.attacks import AttackAxis
from environments.core import Env, Policy, TaskSpec
from environments.meta import EnvMeta, Panel, RoleSlot
from environments.registry import register, register_env
from environments.servicedesk.anchors import DoNothing, Oracle, RandomValid, Shortcut
from environments.servicedesk.dialogue import STOP_MARK
from environments.servicedesk.env import COMPONENTS, ServiceDeskEnv, goal_of
from environments.servicedesk.injections import GOALS, GUIDANCE, STYLES
from environments.servicedesk.tasks import TEMPLATES
from environments.servicedesk.users import RuleUser, goal_card

assert len(TEMPLATES) >= 40, f"only {len(TEMPLATES)} templates"
for _spec in TEMPLATES.values():
    register(
        TaskSpec(
            env="servicedesk",
            key=_spec.key,
            split=_spec.split,
            description=_spec.title,
            horizon="one call",
            pass_threshold=1.0,
            spec={"template": _spec.key},
            public_seeds=(0, 1, 2),
        ),
        ServiceDeskEnv,
    )


def _rule_user(env: Env, seed: int) -> Policy:
    assert isinstance(env, ServiceDeskEnv)
    return RuleUser(env.goal, env.profile, seed)


def _brief(env: Env) -> str:
    assert isinstance(env, ServiceDeskEnv)
    return goal_card(goal_of(env), env.profile)


register_env(
    EnvMeta(
        env="servicedesk",
        calibration="environments.servicedesk.calibration",
        playable=True,
        panels=(
            Panel("Conversation", "get_conversation", renderer="chat", key="c"),
            Panel("Customer record", "get_verified_account", renderer="json", key="a"),
            Panel("Policy", "read_policy", renderer="text", key="p"),
        ),
        shortcuts={"t": "transfer_to_human", "v": "verify_identity"},
        control_marks=(STOP_MARK,),
        anchors={"oracle": Oracle, "do-nothing": DoNothing, "shortcut": Shortcut, "random-valid": RandomValid},
        default_anchor="oracle",
        score_components=COMPONENTS,
        # No demo_task: the console's first-run demo takes the first playable environment by name, and that would
        # move it off StoreBench (tests/lab/rollouts/test_demo.py); "roaming-on" is the short task to name when wanted.
        model_demo_task="roaming-on",  # one call: the local model plays the agent's side live in the first-run demo
        attacks=AttackAxis(styles=STYLES, goals=GOALS, guidance=GUIDANCE),
        roles=(
            RoleSlot(
                "user",
                default=_rule_user,
                description="the caller: a seeded rule-based simulator by default (options.user_profile picks its behaviour profile)",
                brief=_brief,
            ),
        ),
    )
)

__all__ = ["ServiceDeskEnv"]
