"""A person in the user's seat: a chat session against an agent of the project, recorded as a human episode.

    session = chat_session_start(user=u, project=p, task_id="servicedesk/...", seed=0, agent="oracle")  # runs the agent
    outcome = chat_reply(session=session, user=u, expected_index=4, text="My booking is B-1042.")        # and again
    chat_close(session=session, user=u)                       # the person ends the conversation

The environment must declare the role slot (environments.meta.RoleSlot, "user" by default). The agent (any agent
config of the project: a scripted anchor, or a model for those who may run models) acts through the runner's own
step path until it speaks to the user; then the session waits for the person's reply, recorded as a step of
role `user` and source `human` (so it reaches the environment and replay exactly as a simulated user's turn),
after which the agent acts again. Other slots the environment declares take their default turns around the
person's, in declaration order. The session ends when the environment ends, the agent stops, errs or runs out of
steps, or the person closes the conversation ("cancelled": a person stopped it; the score is the environment's
as for any ending). The person is told the slot's goal card (RoleSlot.brief), never the agent's tools.

Resumable and spectated like expert play (lab.play.services): the environment is rebuilt by replaying the stored
steps when the warm copy is gone, every step is stored with `episode_append_step` (live after commit), and a reply
carries the step index it was written for (a stale one is a Conflict). The agent is rebuilt from its config when
the warm copy is gone and acts from the stored history, as a resumed rollout does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from environments import registry
from environments.core import Action, Env
from environments.records import Step
from environments.roles import USER
from environments.runner import DEFAULT_MAX_CONSECUTIVE_ERRORS, apply_action, env_end_reason, opening_step
from environments.team import safe_act, slot_policies, slot_turns
from lab.diagnoses.policies import policy_factory_for_agent, runs_a_model
from lab.errors import Conflict, DomainError, Forbidden
from lab.play.models import HumanSession
from lab.play.services import (
    ENV_CACHE,
    HumanPolicy,
    _close,
    _errors_in_a_row,
    _Warm,
    _warm_env,
    actor_step_count,
    play_message_check,
    play_require_player,
    play_start_check,
    session_header,
)
from lab.projects.models import WRITE_ROLES, Project
from lab.projects.selectors import role_in
from lab.trajectories.models import AgentConfig, Episode, EpisodeStatus
from lab.trajectories.services import episode_append_step, episode_finish, episode_start, episode_steps_as_dicts, task_resolve


@dataclass
class ChatOutcome:
    steps: list[Step] = field(default_factory=list)  # every step this call stored, in order
    finished: bool = False


def chat_goal_card(session: HumanSession, env: Env) -> str:
    """What the person in the slot is told: the slot's brief, else its description."""
    slot = next((s for s in registry.env_meta(env.name).roles if s.name == session.role), None)
    if slot is None:
        return ""
    return slot.brief(env) if slot.brief else slot.description


def chat_session_start(*, user: Any, project: Project, task_id: str, seed: int, agent: str, slot: str = USER) -> HumanSession:
    """A new session in which `user` plays the environment's `slot` against the project's agent named `agent`;
    the agent acts at once until it speaks (or the episode ends)."""
    spec = play_start_check(user=user, project=project, task_id=task_id, seed=seed)
    slots = [s.name for s in registry.env_meta(spec.env).roles]
    if slot not in slots:
        raise DomainError("no_such_seat", f"{task_id} has no {slot!r} role to play; its role slots: {slots or 'none'}", path="task")
    config = AgentConfig.objects.filter(project=project, name=agent).first() if isinstance(agent, str) else None
    if config is None or config.kind == "human":
        raise DomainError("unknown_agent", f"agent: no agent {str(agent)[:80]!r} in {project.slug} to talk to", path="agent")
    if config.disabled_reason:
        raise DomainError("agent_disabled", f"agent: {config.name} may not run: {config.disabled_reason}", path="agent")
    if runs_a_model(config) and role_in(user=user, project=project) not in WRITE_ROLES:
        raise Forbidden("forbidden", f"{config.name} runs a model; only researchers and owners may start it. Pick a scripted agent.")
    env = registry.make(task_id, seed=seed)
    actor = policy_factory_for_agent(config)(env, seed)
    person = HumanPolicy(user.username)
    header = session_header(
        env,
        actor,
        team={
            "actor": actor.describe(),
            "harness_level": "tools-only",
            "slots": {
                name: {"policy": person.describe() if name == slot else p.describe(), "default": name != slot}
                for name, p in slot_policies(env).items()
            },
        },
    )
    task = task_resolve(project=project, env=spec.env, key=spec.key, env_version=env.version)
    first = opening_step(env)
    with transaction.atomic():
        episode = episode_start(project=project, task=task, source="human", seed=seed, agent=config, header=header, user=user)
        episode_append_step(episode=episode, step=first)
        session = HumanSession.objects.create(user=user, episode=episode, task=task, seed=seed, role=slot, agent=config)
    chain = first["state_hash"]
    assert chain is not None, "opening_step hashes the root of the chain"
    ENV_CACHE.put(episode.pk, _Warm(env=env, chain=chain, step_count=1, agent=actor))
    chat_advance(session=session)
    return session


def chat_require_seat(session: HumanSession) -> None:
    if session.role == "actor":
        raise DomainError("wrong_seat", f"session {session.pk} plays the agent's side; use the play page", status=409)


def awaiting_person(session: HumanSession, steps: list[Step]) -> bool:
    """Whether the agent has spoken and the person's reply is due: the last turn that is neither a default
    slot's nor the environment's is an actor step with a message."""
    for step in reversed(steps):
        role = step.get("role") or ("env" if step.get("source") == "env" else "actor")
        if role == "actor":
            return bool(step.get("message"))
        if role == session.role or role == "env":
            return False
    return False


def chat_reply(*, session: HumanSession, user: Any, expected_index: int, text: str) -> ChatOutcome:
    """The person's reply as step `expected_index` (role = the seat, source human); then the agent acts again."""
    play_require_player(session=session, user=user)
    chat_require_seat(session)
    text = play_message_check(text)
    return _locked(session, expected_index=expected_index, reply=text)


def chat_advance(*, session: HumanSession) -> ChatOutcome:
    """Let the agent act until it speaks or the episode ends (after a start, or to resume an interrupted turn)."""
    return _locked(session, expected_index=None, reply=None)


def _locked(session: HumanSession, *, expected_index: int | None, reply: str | None) -> ChatOutcome:
    with ENV_CACHE.episode_lock(session.episode_id):
        warm: _Warm | None = None
        outcome = ChatOutcome()
        try:
            with transaction.atomic():
                episode = Episode.objects.select_for_update().get(pk=session.episode_id)
                if episode.status != EpisodeStatus.RUNNING:
                    if reply is None:
                        return outcome
                    raise Conflict("session_finished", f"this conversation ended ({episode.termination_reason or episode.status})")
                if expected_index is not None and expected_index != episode.step_count:
                    raise Conflict(
                        "step_taken",
                        f"step {expected_index} is already taken (another tab or a repeated send); the conversation is at step "
                        f"{episode.step_count}. Reload to see the latest messages.",
                        index=expected_index,
                    )
                warm, _ = _warm_env(session, episode)
                steps = episode_steps_as_dicts(episode)
                if reply is not None:
                    if not awaiting_person(session, steps):
                        raise Conflict("not_your_turn", "the agent has not finished its turn; reload to see its answer")
                    outcome.steps += _person_turn(session, episode, warm, steps, reply)
                elif awaiting_person(session, steps):
                    return outcome
                if not warm.env.done:
                    outcome.steps += _agent_turns(session, episode, warm, steps)
                else:
                    _close(session, episode, warm.env, env_end_reason(warm.env) or "horizon_reached")
                outcome.finished = episode.status != EpisodeStatus.RUNNING
        except BaseException:
            warm = None  # the environment may be ahead of the database now; the next call replays
            raise
        finally:
            if warm is not None and not outcome.finished:
                ENV_CACHE.put(session.episode_id, warm)
    session.episode = episode
    return outcome


def _store(episode: Episode, warm: _Warm, steps: list[Step], step: Step, chain: str) -> None:
    episode_append_step(episode=episode, step=step)
    steps.append(step)
    warm.chain, warm.step_count = chain, episode.step_count


def _others(session: HumanSession, env: Env, *, before: bool) -> dict[str, Any]:
    """The default-filled slots declared before (or after) the person's, in declaration order."""
    names = [s.name for s in registry.env_meta(env.name).roles]
    mine = names.index(session.role)
    chosen = names[:mine] if before else names[mine + 1 :]
    return {name: policy for name, policy in slot_policies(env).items() if name in chosen}


def _slots(episode: Episode, warm: _Warm, steps: list[Step], slots: dict[str, Any]) -> list[Step]:
    added: list[Step] = []
    if slots:
        chain, _ = slot_turns(warm.env, slots, steps, warm.chain, emit=added.append)
        for step in added:
            episode_append_step(episode=episode, step=step)
        warm.chain, warm.step_count = chain, episode.step_count
    return added


def _person_turn(session: HumanSession, episode: Episode, warm: _Warm, steps: list[Step], text: str) -> list[Step]:
    step, chain, _ = apply_action(
        warm.env, Action(message=text), index=episode.step_count, chain=warm.chain, source="human", role=session.role
    )
    _store(episode, warm, steps, step, chain)
    HumanSession.objects.filter(pk=session.pk).update(last_active_at=timezone.now())  # what the idle sweep reads
    return [step, *_slots(episode, warm, steps, _others(session, warm.env, before=False))]


def _agent_turns(session: HumanSession, episode: Episode, warm: _Warm, steps: list[Step]) -> list[Step]:
    """The agent acts (one runner step each) until it speaks to the user, or the episode ends as the runner ends it."""
    env = warm.env
    if warm.agent is None:
        assert session.agent is not None, f"chat session {session.pk} has no agent"
        warm.agent = policy_factory_for_agent(session.agent)(env, session.seed)
    added: list[Step] = []
    tools = env.tools()
    while True:
        if actor_step_count(episode) >= env.max_steps:
            _close(session, episode, env, "max_steps")
            return added
        action, latency = safe_act(warm.agent, steps, tools)
        if exception := action.meta.get("policy_exception"):
            cause = {"type": "PolicyError", "message": str(exception)[:500]}
            score = env.score().to_dict()
            episode_finish(episode=episode, reason="agent_error", score=score, reward=score["composite"], cause=cause)
            session.mark_ended()
            return added
        step, chain, _ = apply_action(env, action, index=episode.step_count, chain=warm.chain)
        step["latency_ms"] = latency
        _store(episode, warm, steps, step, chain)
        added.append(step)
        reason = env_end_reason(env) or ("agent_stop" if action.stop else None)
        if reason is None and _errors_in_a_row(episode, DEFAULT_MAX_CONSECUTIVE_ERRORS) >= DEFAULT_MAX_CONSECUTIVE_ERRORS:
            reason = "too_many_errors"
        if reason is not None:
            _close(session, episode, env, reason)
            return added
        if action.message:
            added += _slots(episode, warm, steps, _others(session, env, before=True))
            if env.done:
                _close(session, episode, env, env_end_reason(env) or "horizon_reached")
            return added


def chat_close(*, session: HumanSession, user: Any) -> Episode:
    """The person ends the conversation: the episode ends as "cancelled" and is scored by the environment."""
    play_require_player(session=session, user=user)
    chat_require_seat(session)
    with ENV_CACHE.episode_lock(session.episode_id), transaction.atomic():
        episode = Episode.objects.select_for_update().get(pk=session.episode_id)
        if episode.status != EpisodeStatus.RUNNING:
            raise Conflict("session_finished", f"this conversation already ended ({episode.termination_reason or episode.status})")
        warm, _ = _warm_env(session, episode)
        _close(session, episode, warm.env, "cancelled")
    session.episode = episode
    return episode
