"""Human expert play: a session is an Episode of source=human that advances one submitted tool call at a time.

    session = play_session_start(user=u, project=p, task_id="storebench/cash-crunch", seed=0)   # a playable env's task
    outcome = play_submit(session=session, user=u, expected_index=1, name="get_finance", arguments={})
    play_finish(session=session, user=u)                       # scores it with the environment's composite

A submit goes through the runner's own step path (`environments.runner.apply_action`: the same tool execution,
budget, state-hash chain and step record as a model's rollout) and is stored with `episode_append_step`, which
publishes it to spectators after commit. The live environment is kept in a per-process cache; a cache entry is
used only if its chain hash equals the last stored step's, otherwise the environment is rebuilt by replaying
the stored steps, so a reload, a second worker or a restarted server continue in exactly the same state.

In an environment with role slots (a simulated user, environments.meta.RoleSlot), a submit that carries a
message to the user is followed, within the same submit, by each slot's turn (environments.team.slot_turns, the
runner's own slot machinery: the env's default user, or a model filling the slot), stored as steps of the slot's
role. The budget counts the player's own steps only, as the runner counts a model's.

Two tabs cannot fork a session: the form carries the step index it was rendered for, and a submit whose index
is already taken is refused with a Conflict (the episode row is locked for the whole submit).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from environments import registry
from environments.core import Action, Env, EnvError, Policy, TaskSpec, ToolCall, ToolSpec, tool_schema_hash
from environments.records import Header
from environments.records import Step as RecordStep
from environments.replay import env_for_header, replay_prefix
from environments.runner import DEFAULT_MAX_CONSECUTIVE_ERRORS, apply_action, env_end_reason, opening_step
from environments.team import slot_policies, slot_turns
from lab.errors import Conflict, DomainError, Forbidden
from lab.play.models import HumanSession
from lab.play.screens import records_screens
from lab.projects.models import ANNOTATE_ROLES, Project
from lab.projects.selectors import role_in
from lab.screenshots.services import step_screenshot_attach
from lab.trajectories.models import AgentConfig, AgentKind, Episode, EpisodeStatus, Step
from lab.trajectories.services import episode_append_step, episode_finish, episode_start, task_resolve
from lab.trajectories.shared import episode_header

_CACHE_SIZE = 64  # environments kept warm per process; the largest world (StoreBench's) is ~40 kB pickled


class HumanPolicy(Policy):
    """The browser's submitted action, as a Policy: the runner asks it to act and it answers what was sent."""

    kind = "human"

    def __init__(self, username: str, action: Action | None = None) -> None:
        self.name = f"human:{username}"
        self.action = action or Action()

    def act(self, history: list[RecordStep], tools: list[ToolSpec]) -> Action:
        return self.action


@dataclass
class _Warm:
    env: Env
    chain: str
    step_count: int
    agent: Policy | None = None  # the model or scripted agent a person in a role slot talks to (lab.play.chat)


class _EnvCache:
    """Live environments by episode id, LRU. Entries are checked against the database before use."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.entries: OrderedDict[int, _Warm] = OrderedDict()
        self.lock = threading.Lock()
        self.episode_locks: dict[int, threading.Lock] = {}

    def episode_lock(self, episode_id: int) -> threading.Lock:
        with self.lock:
            return self.episode_locks.setdefault(episode_id, threading.Lock())

    def take(self, episode_id: int) -> _Warm | None:
        with self.lock:
            return self.entries.pop(episode_id, None)

    def put(self, episode_id: int, warm: _Warm) -> None:
        with self.lock:
            self.entries[episode_id] = warm
            self.entries.move_to_end(episode_id)
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()


ENV_CACHE = _EnvCache(_CACHE_SIZE)


@dataclass
class SubmitOutcome:
    step: RecordStep
    finished: bool
    replayed: bool  # True when the environment had to be rebuilt from the stored steps
    replies: list[RecordStep] = field(default_factory=list)  # the role slots' turns that answered the step


def _task_id(session: HumanSession) -> str:
    return f"{session.task.env}/{session.task.key}"


def _session_env(session: HumanSession, episode: Episode) -> Env:
    """A fresh environment of the engine version the session was recorded with (an engine this installation
    no longer runs is refused: the session is then read-only)."""
    header = episode_header(episode)
    try:
        return env_for_header({**header, "env": session.task.env, "task": session.task.key, "seed": session.seed})
    except EnvError as exc:
        raise DomainError(exc.code, exc.message, status=409) from None


def play_require_player(*, session: HumanSession, user: Any) -> None:
    """Forbidden unless `user` started this session and may still play in its project (the role may have changed)."""
    if session.user_id != getattr(user, "pk", None):
        raise Forbidden("not_your_session", "Only the expert who started this session may play it; you can watch it live.")
    if role_in(user=user, project=session.episode.project_id) not in ANNOTATE_ROLES:
        raise Forbidden("forbidden", "Your role in this project does not allow playing.")


def _require_actor_seat(session: HumanSession) -> None:
    if session.role != "actor":
        raise DomainError("wrong_seat", f"in session {session.pk} you play the {session.role}; use its chat page", status=409)


def play_start_check(*, user: Any, project: Project, task_id: str, seed: int) -> TaskSpec:
    """The checks every session start makes (either seat): the role, the seed, the task."""
    role = role_in(user=user, project=project)
    if role not in ANNOTATE_ROLES:
        raise Forbidden("forbidden", f"A {role or 'non-member'} may not play; experts, researchers and owners may.")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**31:
        raise DomainError("invalid_seed", f"seed must be a whole number from 0 to 2147483647, got {seed!r}", path="seed")
    try:
        return registry.get_task(task_id)
    except EnvError as exc:
        raise DomainError("unknown_task", exc.message, path="task") from None


def session_header(env: Env, policy: Policy, **extra: Any) -> Header:
    """The record header of a session with a person in it (as the runner writes one, with the play page's limits)."""
    tools = env.tools()
    header: Header = {
        **env.header(),
        "policy": policy.describe(),
        "harness": {"max_steps": env.max_steps, "max_consecutive_errors": DEFAULT_MAX_CONSECUTIVE_ERRORS},
        "source": "human",
        "parent": None,
        "tools": [t.openai_schema() for t in tools],
        "tool_schema_hash": tool_schema_hash(tools),
    }
    header.update(cast(Header, extra))  # the caller's own header fields (a chat session's team)
    return header


def play_session_start(*, user: Any, project: Project, task_id: str, seed: int) -> HumanSession:
    """A new session: an episode of source=human holding the environment's opening step."""
    spec = play_start_check(user=user, project=project, task_id=task_id, seed=seed)
    if not registry.env_meta(spec.env).playable:
        playable = ", ".join(m.env for m in registry.list_envs() if m.playable)
        raise DomainError("not_playable", f"{task_id} cannot be played in the browser; playable: {playable}", path="task")
    env = registry.make(task_id, seed=seed)
    policy = HumanPolicy(user.username)
    header = session_header(env, policy)
    task = task_resolve(project=project, env=spec.env, key=spec.key, env_version=env.version)
    agent, _ = AgentConfig.objects.get_or_create(project=project, name=policy.name, defaults={"kind": AgentKind.HUMAN})
    first = opening_step(env)
    with transaction.atomic():
        episode = episode_start(project=project, task=task, source="human", seed=seed, agent=agent, header=header, user=user)
        if records_screens(spec.env):
            first = step_screenshot_attach(project=project, step=first, env=env)
        episode_append_step(episode=episode, step=first)
        session = HumanSession.objects.create(user=user, episode=episode, task=task, seed=seed)
    chain = first["state_hash"]
    assert chain is not None, "opening_step hashes the root of the chain"
    ENV_CACHE.put(episode.pk, _Warm(env=env, chain=chain, step_count=1))
    return session


def _last_hash(episode: Episode) -> str | None:
    return Step.objects.filter(episode=episode, index=episode.step_count - 1).values_list("state_hash", flat=True).first()


def _warm_env(session: HumanSession, episode: Episode) -> tuple[_Warm, bool]:
    """The session's environment at the episode's last stored step: from the cache if it provably matches,
    else rebuilt by replaying the stored steps (which verifies every step's chain hash)."""
    warm = ENV_CACHE.take(episode.pk)
    last = _last_hash(episode)
    if warm is not None and warm.step_count == episode.step_count and warm.chain == last:
        return warm, False
    from lab.trajectories.services import episode_steps_as_dicts

    env = _session_env(session, episode)
    chain = replay_prefix(env, episode_steps_as_dicts(episode))
    return _Warm(env=env, chain=chain, step_count=episode.step_count), True


def _errors_in_a_row(episode: Episode, limit: int) -> int:
    count = 0
    for results in Step.objects.filter(episode=episode, source="agent").order_by("-index").values_list("results", flat=True)[:limit]:
        if not any(r.get("is_error") for r in results or []):
            break
        count += 1
    return count


MAX_MESSAGE_CHARS = 4000


def play_message_check(message: Any) -> str:
    """A message typed by a person (to the user, or as the user): non-empty text of at most MAX_MESSAGE_CHARS."""
    if not isinstance(message, str) or not message.strip():
        raise DomainError("invalid_message", "message: write something first (it is empty)", path="message")
    if len(message) > MAX_MESSAGE_CHARS:
        raise DomainError("invalid_message", f"message: at most {MAX_MESSAGE_CHARS} characters, got {len(message)}", path="message")
    return message.strip()


def play_submit(
    *, session: HumanSession, user: Any, expected_index: int, name: str | None, arguments: Any = None, message: str | None = None
) -> SubmitOutcome:
    """Apply one action as step `expected_index`: a tool call (`name`, `arguments`), a message to the user, or
    both. Refuses (Conflict) if that step is already taken."""
    play_require_player(session=session, user=user)
    _require_actor_seat(session)
    if message is not None:
        message = play_message_check(message)
    if not name and message is None:
        raise DomainError("empty_action", "choose a tool or write a message", path="tool")
    calls = [ToolCall(name=name, arguments=arguments if arguments is not None else {})] if name else []
    replies: list[RecordStep] = []
    with ENV_CACHE.episode_lock(session.episode_id):
        warm: _Warm | None = None
        finished = False
        try:
            with transaction.atomic():
                episode = Episode.objects.select_for_update().get(pk=session.episode_id)
                if episode.status != EpisodeStatus.RUNNING:
                    raise Conflict(
                        "session_finished", f"this session ended ({episode.termination_reason or episode.status}); start a new one"
                    )
                if expected_index != episode.step_count:
                    raise Conflict(
                        "step_taken",
                        f"step {expected_index} is already taken (another tab or a repeated submit); the session is at step "
                        f"{episode.step_count}. Reload to see the latest state.",
                        index=expected_index,
                    )
                warm, replayed = _warm_env(session, episode)
                action = HumanPolicy(user.username, Action(tool_calls=calls, message=message)).act([], warm.env.tools())
                step, chain, _failed = apply_action(warm.env, action, index=episode.step_count, chain=warm.chain)
                if records_screens(session.task.env):
                    step = step_screenshot_attach(project=episode.project, step=step, env=warm.env)
                episode_append_step(episode=episode, step=step)
                if message is not None and not warm.env.done:
                    chain, replies = _slot_replies(episode, warm.env, chain)
                warm.chain, warm.step_count = chain, episode.step_count
                finished = _finish_if_over(session, episode, warm.env)
                HumanSession.objects.filter(pk=session.pk).update(budget_used=session.budget_used + 1, last_active_at=timezone.now())
                session.budget_used += 1
        except BaseException:
            warm = None  # the environment may be ahead of the database now; the next submit replays
            raise
        finally:
            if warm is not None and not finished:
                ENV_CACHE.put(session.episode_id, warm)
    session.episode = episode
    return SubmitOutcome(step=step, finished=finished, replayed=replayed, replies=replies)


def _slot_replies(episode: Episode, env: Env, chain: str, skip: str = "") -> tuple[str, list[RecordStep]]:
    """The environment's role slots answer the step just stored (each with its default policy, as in a rollout
    with no slot override); their steps are stored in order. `skip`: the slot a person fills (they answer later)."""
    slots = {name: policy for name, policy in slot_policies(env).items() if name != skip}
    if not slots:
        return chain, []
    from lab.trajectories.services import episode_steps_as_dicts

    steps = episode_steps_as_dicts(episode)
    added: list[RecordStep] = []
    chain, _ = slot_turns(env, slots, steps, chain, emit=added.append)
    for step in added:
        episode_append_step(episode=episode, step=step)
    return chain, added


def actor_step_count(episode: Episode) -> int:
    """The player's (the actor's) steps so far: what the step budget counts, as the runner counts a model's."""
    return Step.objects.filter(episode=episode, source="agent", role__in=("", "actor")).count()


def _finish_if_over(session: HumanSession, episode: Episode, env: Env) -> bool:
    """The runner's end conditions, applied after each human step, so a human ends exactly where a model would."""
    reason: str | None = None
    if env.done:
        reason = env_end_reason(env)
    elif actor_step_count(episode) >= env.max_steps:
        reason = "max_steps"
    elif _errors_in_a_row(episode, DEFAULT_MAX_CONSECUTIVE_ERRORS) >= DEFAULT_MAX_CONSECUTIVE_ERRORS:
        reason = "too_many_errors"
    if reason is None:
        return False
    _close(session, episode, env, reason)
    return True


def _close(session: HumanSession, episode: Episode, env: Env, reason: str) -> None:
    score = env.score().to_dict()
    episode_finish(episode=episode, reason=reason, score=score, reward=score["composite"])
    session.mark_ended(abandoned=reason == "abandoned")


def play_finish(*, session: HumanSession, user: Any, abandon: bool = False) -> Episode:
    """End the session now: `agent_stop` (scored by the environment, which may score an unfinished run 0) or
    `abandoned`. The score is the same `env.score()` every rollout gets."""
    play_require_player(session=session, user=user)
    _require_actor_seat(session)
    with ENV_CACHE.episode_lock(session.episode_id), transaction.atomic():
        episode = Episode.objects.select_for_update().get(pk=session.episode_id)
        if episode.status != EpisodeStatus.RUNNING:
            raise Conflict("session_finished", f"this session already ended ({episode.termination_reason or episode.status})")
        warm, _ = _warm_env(session, episode)
        _close(session, episode, warm.env, "abandoned" if abandon else "agent_stop")
    session.episode = episode
    return episode


def play_sessions_abandon_idle(*, now: datetime | None = None) -> int:
    """End every session untouched for PRACTICUM_PLAY_IDLE_MINUTES as abandoned (either seat): unscored, so it
    ranks nowhere and counts in no success rate; the episode keeps its steps. Returns how many ended. Run on every
    play page and by `manage.py abandon_idle_sessions` (for cron): one query when nothing is idle."""
    cutoff = (now or timezone.now()) - timedelta(minutes=settings.PRACTICUM_PLAY_IDLE_MINUTES)
    idle = HumanSession.objects.filter(status=HumanSession.Status.ACTIVE, last_active_at__lt=cutoff, episode__status=EpisodeStatus.RUNNING)
    ended = 0
    for pk, episode_id in idle.values_list("pk", "episode_id"):
        with ENV_CACHE.episode_lock(episode_id), transaction.atomic():
            episode = Episode.objects.select_for_update().get(pk=episode_id)
            if episode.status != EpisodeStatus.RUNNING or not HumanSession.objects.filter(pk=pk, last_active_at__lt=cutoff).exists():
                continue  # its player came back (or it ended) while we looked
            episode_finish(episode=episode, reason="abandoned")
            HumanSession.objects.filter(pk=pk).abandon()  # it keeps last_active_at, the moment its player left
            ENV_CACHE.take(episode_id)
            ended += 1
    return ended


def play_env(session: HumanSession) -> Env:
    """A private copy of the session's current environment, for read-only views (summary, status line)."""
    with ENV_CACHE.episode_lock(session.episode_id):
        episode = Episode.objects.get(pk=session.episode_id)
        warm, _ = _warm_env(session, episode)
        copy = _session_env(session, episode)
        copy.restore(warm.env.snapshot())
        if episode.status == EpisodeStatus.RUNNING:
            ENV_CACHE.put(session.episode_id, warm)
    return copy
