"""The bad-input table: every surface (API, console forms, play, websockets) answers hostile input with a 4xx.

Each row is (surface, method, url, payload, lowest and highest acceptable status). API rows also check the
`{"error": {"code", "message"}}` shape, DRF's own 404/405 included. Run it on PostgreSQL as well
(DATABASE_URL=postgres://...): it is stricter than SQLite about NUL characters and int64 overflow.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from lab.ws_urls import websocket_urlpatterns

BIG = str(2**63)  # one past the largest int64
HUGE = "9" * 40
NUL = "\x00"
SURROGATE = "\ud800"
DEEP = "[" * 100_000 + "]" * 100_000  # JSON nested 1e5 deep
LONG = "x" * 100_000


def _record(**header: Any) -> str:
    from environments.trajectory import make_step, new_record

    base = {"env": "toyenv", "task": "bad-input", "seed": 0, "source": "upload", "policy": {"name": "test-agent"}}
    step = make_step(
        index=0,
        message="hi",
        tool_calls=[{"id": "c0", "name": "lookup", "arguments": {}}],
        results=[{"call_id": "c0", "content": "ok", "is_error": False}],
    )
    return json.dumps(new_record(header={**base, **header}, steps=[step]), ensure_ascii=True)


def _deep_in(field: str, **others: Any) -> str:
    """A JSON object whose `field` holds the 1e5-deep value (spliced in as text: json.dumps would recurse too)."""
    return json.dumps({**others, field: "@DEEP@"}).replace('"@DEEP@"', DEEP)


# (surface, method, url, payload, low, high); payload: dict = form or JSON object, str = raw JSON body.
API: list[tuple[str, str, str, Any, int, int]] = [
    ("api", "get", f"/api/v1/episodes/{BIG}/", None, 404, 404),
    ("api", "get", f"/api/v1/episodes/{HUGE}/steps/", None, 404, 404),
    ("api", "get", "/api/v1/episodes/not-an-id/", None, 404, 404),
    ("api", "get", f"/api/v1/tasks/{BIG}/", None, 404, 404),
    ("api", "get", f"/api/v1/agents/{BIG}/", None, 404, 404),
    ("api", "get", f"/api/v1/diagnoses/{BIG}/", None, 404, 404),
    ("api", "get", f"/api/v1/runs/{BIG}/", None, 404, 404),
    ("api", "post", f"/api/v1/loops/{BIG}/cancel/", None, 404, 404),
    ("api", "get", f"/api/v1/runs/{BIG}/metrics/", None, 404, 404),
    ("api", "get", f"/api/v1/evaluations/{BIG}/", None, 404, 404),
    ("api", "get", "/api/v1/evaluations/{evaluation}/compare/?with=" + BIG, None, 404, 404),
    ("api", "get", f"/api/v1/rollouts/{BIG}/", None, 404, 404),
    ("api", "get", f"/api/v1/imports/{BIG}/", None, 404, 404),
    ("api", "get", f"/api/v1/diagnoses/jobs/{BIG}/", None, 404, 404),
    ("api", "get", f"/api/v1/loops/{BIG}/", None, 404, 404),
    ("api", "post", f"/api/v1/loops/{BIG}/promote/", None, 404, 404),
    ("api", "get", f"/api/v1/loops/failing/?evaluation={BIG}", None, 400, 404),
    ("api", "post", "/api/v1/loops/", {"project": "acme", "evaluation": BIG, "config": {}}, 400, 404),
    ("api", "post", "/api/v1/loops/", {"project": "acme", "evaluation": "{evaluation}", "config": {"test_seeds": [BIG]}}, 400, 409),
    ("api", "post", "/api/v1/loops/", {"project": "acme", "evaluation": "{evaluation}", "config": {"diagnoser": NUL}}, 400, 409),
    ("api", "get", f"/api/v1/diagnoses/attempts/?episode={BIG}", None, 400, 404),
    ("api", "get", f"/api/v1/diagnoses/?episode={BIG}", None, 400, 404),
    ("api", "get", f"/api/v1/diagnoses/credit/?episode={BIG}", None, 400, 404),
    ("api", "get", f"/api/v1/episodes/?seed={BIG}", None, 400, 400),
    ("api", "get", f"/api/v1/episodes/?agent={BIG}", None, 400, 400),
    ("api", "get", f"/api/v1/episodes/?project={BIG}", None, 400, 404),
    ("api", "get", f"/api/v1/tasks/?project={BIG}", None, 400, 404),
    ("api", "get", "/api/v1/episodes/?after=2024-02-30T00:00:00", None, 400, 400),
    ("api", "get", "/api/v1/episodes/?before=2024-13-01T25:61:00", None, 400, 400),
    ("api", "get", "/api/v1/datasets/export?after=2023-02-29T10:00:00Z", None, 400, 400),
    ("api", "get", "/api/v1/episodes/?task=%00", None, 400, 400),
    ("api", "get", "/api/v1/episodes/?q=a%00b", None, 400, 400),
    ("api", "get", "/api/v1/episodes/?score_min=nan", None, 400, 400),
    ("api", "get", "/api/v1/episodes/?score_min=inf", None, 400, 400),
    ("api", "get", "/api/v1/episodes/{episode}/steps/?offset=" + BIG, None, 400, 400),
    ("api", "get", "/api/v1/episodes/{episode}/steps/?limit=%00", None, 400, 400),
    ("api", "get", "/api/v1/episodes/{episode}/export?format=%00", None, 400, 400),
    ("api", "get", "/api/v1/diagnoses/credit/?episode={episode}&damping=nan", None, 400, 400),
    ("api", "get", "/api/v1/diagnoses/credit/?episode={episode}&top=1e999", None, 400, 400),
    ("api", "get", "/api/v1/diagnoses/export/?view=%00", None, 400, 400),
    ("api", "delete", "/api/v1/episodes/{episode}/", None, 405, 405),
    ("api", "get", "/api/v1/episodes/?colour=red", None, 400, 400),  # unknown query parameters
    ("api", "get", "/api/v1/episodes/{episode}/?expand=steps", None, 400, 400),
    ("api", "get", "/api/v1/datasets/export?formt=native", None, 400, 400),
    ("api", "get", "/api/v1/diagnoses/credit/?episode={episode}&dampng=0.5", None, 400, 400),
    ("api", "post", "/api/v1/tasks/?dry_run=1", {"env": "toyenv", "key": "k"}, 400, 400),
    ("api", "post", "/api/v1/tasks/", {"env": "toyenv", "key": "k" + NUL}, 400, 400),
    ("api", "post", "/api/v1/tasks/", {"env": "toyenv", "key": "k" + SURROGATE}, 400, 400),
    ("api", "post", "/api/v1/tasks/", {"env": "toyenv", "key": LONG}, 400, 400),
    ("api", "post", "/api/v1/tasks/", {"env": LONG, "key": "k"}, 400, 400),
    ("api", "post", "/api/v1/tasks/", {"env": "toyenv", "key": "k", "spec": {"note": NUL}}, 400, 400),
    ("api", "post", "/api/v1/tasks/", {"env": "toyenv", "key": "k", "spec": {"note": SURROGATE}}, 400, 400),
    ("api", "post", "/api/v1/tasks/", {"env": "toyenv", "key": "k", "spec": {NUL: 1}}, 400, 400),
    ("api", "post", "/api/v1/tasks/", {"env": "toyenv", "key": "k", "pass_threshold": "NaN"}, 400, 400),
    ("api", "post", "/api/v1/tasks/", _deep_in("spec", env="toyenv", key="k"), 400, 400),
    ("api", "post", "/api/v1/agents/", {"name": "a", "kind": "scripted", "sampling": {"t": NUL}}, 400, 400),
    ("api", "post", "/api/v1/agents/", {"name": "a" * 1000, "kind": "scripted"}, 400, 400),
    ("api", "post", "/api/v1/agents/", _deep_in("harness", name="a", kind="scripted"), 400, 400),
    ("api", "post", "/api/v1/agents/", _deep_in("sampling", name="a", kind="scripted"), 400, 400),
    ("api", "post", "/api/v1/agents/", _deep_in("team", name="a", kind="scripted"), 400, 400),
    ("api", "post", "/api/v1/agents/", {"name": "a", "kind": "scripted", "team": "critic"}, 400, 400),
    ("api", "post", "/api/v1/agents/", {"name": "a", "kind": "scripted", "team": {"critic": {"agent": NUL}}}, 400, 400),
    (
        "api",
        "post",
        "/api/v1/agents/",
        {"name": "a", "kind": "scripted", "team": {"critic": {"agent": {"kind": "scripted"}, "every": 2**63}}},
        400,
        400,
    ),
    (
        "api",
        "post",
        "/api/v1/agents/",
        {"name": "a", "kind": "scripted", "team": {"consultant": {"agent": {"kind": "scripted"}, "cost": "NaN"}}},
        400,
        400,
    ),
    ("api", "post", "/api/v1/agents/", {"name": "a", "kind": "scripted", "team": {"slots": {LONG: {"kind": "scripted"}}}}, 400, 400),
    (
        "api",
        "post",
        "/api/v1/agents/",
        {"name": "a", "kind": "scripted", "team": {"critic": {"agent": {"kind": "scripted", "model": [1]}}}},
        400,
        400,
    ),
    ("api", "post", "/api/v1/runs/", _deep_in("config", recipe="sft", base_model="tiny"), 400, 400),
    ("api", "post", "/api/v1/runs/", {"recipe": "sft", "base_model": "tiny", "name": NUL}, 400, 400),
    ("api", "post", "/api/v1/runs/", {"recipe": "sft", "base_model": "tiny", "config": {"lr": NUL}}, 400, 400),
    ("api", "post", "/api/v1/runs/", {"recipe": "sft", "base_model": "tiny", "name": LONG}, 400, 400),
    ("api", "post", "/api/v1/runs/", {"recipe": "sft", "base_model": LONG}, 400, 400),
    ("api", "post", "/api/v1/runs/", {"recipe": LONG, "base_model": "tiny"}, 400, 400),
    ("api", "post", "/api/v1/runs/", {"recipe": "sft", "base_model": "no-such-model"}, 400, 400),  # not in the store: lists the installed
    (
        "api",
        "post",
        "/api/v1/runs/",
        {"recipe": "grpo", "base_model": "tiny", "config": {"decode_token_budget": 10**13}},
        400,
        400,
    ),  # names what fits
    ("api", "post", "/api/v1/runs/", {"recipe": "grpo", "base_model": "tiny", "config": {"decode_token_budget": -1}}, 400, 400),
    ("api", "post", "/api/v1/runs/", {"recipe": "grpo", "base_model": "tiny", "config": {"decode_token_budget": "lots"}}, 400, 400),
    ("api", "post", "/api/v1/runs/", {"recipe": "grpo", "base_model": "tiny", "config": {"decode_token_budget": BIG}}, 400, 400),
    ("api", "post", "/api/v1/agents/", {"name": "a", "kind": "hf", "model": "no-such-model"}, 400, 400),
    (
        "api",
        "post",
        "/api/v1/agents/",
        {"name": "a", "kind": "hf", "model": "org/tiny", "harness": {"compact_tools": "x"}},
        400,
        400,
    ),
    ("api", "post", "/api/v1/evaluations/", {"agent": "smart-triage", "task_set": LONG, "seeds": [0]}, 400, 400),
    ("api", "post", "/api/v1/rollouts/", {"agent": LONG, "task": "storebench/cash-crunch", "seed": 0}, 400, 400),
    ("api", "post", "/api/v1/diagnoses/", {"episode": "{episode}", "step_index": 0, "category": LONG, "explanation": "x"}, 400, 400),
    (
        "api",
        "post",
        "/api/v1/diagnoses/",
        {"episode": "{episode}", "step_index": 0, "category": "other", "explanation": "x", "author_model": LONG},
        400,
        400,
    ),
    ("api", "post", "/api/v1/diagnoses/rule/", {"episode": "{episode}", "anchor": LONG}, 400, 422),
    ("api", "post", "/api/v1/diagnoses/{diagnosis}/verify/", {"agent": LONG}, 400, 404),
    ("api", "post", "/api/v1/runs/{run}/evaluate-checkpoint/", {"checkpoint": BIG, "task_set": "toyenv/eval", "seeds": [0]}, 404, 404),
    ("api", "post", "/api/v1/runs/{run}/evaluate-checkpoint/", {"step": 2**63, "task_set": "toyenv/eval", "seeds": [0]}, 400, 404),
    ("api", "post", "/api/v1/runs/{run}/evaluate-checkpoint/", {"task_set": "toyenv/eval", "seeds": [2**63]}, 400, 400),
    ("api", "post", "/api/v1/evaluations/", {"agent": "smart-triage", "task_set": "storebench/dev", "seeds": [2**63]}, 400, 400),
    ("api", "post", "/api/v1/rollouts/", {"agent": "smart-triage", "task": "storebench/cash-crunch", "seed": 2**63}, 400, 400),
    ("api", "post", "/api/v1/rollouts/", {"agent": "smart" + NUL, "task": "storebench/cash-crunch", "seed": 0}, 400, 400),
    ("api", "post", "/api/v1/diagnoses/", {"episode": 2**63, "step_index": 0, "category": "other", "explanation": "x"}, 400, 404),
    ("api", "post", "/api/v1/diagnoses/", {"episode": "{episode}", "step_index": 2**63, "category": "other", "explanation": "x"}, 400, 400),
    ("api", "post", "/api/v1/diagnoses/", {"episode": "{episode}", "step_index": 0, "category": "other", "explanation": NUL}, 400, 400),
    ("api", "post", "/api/v1/diagnoses/", _deep_in("correction", episode=1, step_index=0, category="other", explanation="x"), 400, 400),
    ("api", "post", "/api/v1/diagnoses/pivotal/", {"episode": "{episode}", "seeds": [2**63]}, 400, 404),
    ("api", "post", "/api/v1/diagnoses/jobs/", {"episodes": [2**63]}, 400, 404),
    ("api", "post", "/api/v1/episodes/?project=acme", _record(score={"composite": 0.5, "components": {"speed": "fast"}}), 400, 400),
    ("api", "post", "/api/v1/episodes/?project=acme", _record(score={"composite": "NaN"}), 400, 400),
    ("api", "post", "/api/v1/episodes/?project=acme", _record(tools="not a list"), 400, 400),
    ("api", "post", "/api/v1/episodes/?project=acme", _record(tools=[{"type": "function", "function": "nope"}]), 400, 400),
    ("api", "post", "/api/v1/episodes/?project=acme", _record(tools=[{"type": "function", "function": {"name": 7}}]), 400, 400),
    ("api", "post", "/api/v1/episodes/?project=acme", _record(seed=2**63), 400, 400),
    ("api", "post", "/api/v1/episodes/?project=acme", _record(task="t" + NUL), 400, 400),
    ("api", "post", "/api/v1/episodes/?project=acme", _record(policy={"name": "p" + SURROGATE}), 400, 400),
    ("api", "post", "/api/v1/episodes/?project=acme", _record(started_at="2024-02-30T00:00:00Z"), 400, 400),
    ("api", "post", "/api/v1/episodes/?project=acme", DEEP, 400, 400),
    # Issues 14-16: episode options, comparisons, the fidelity report, coaching.
    (
        "api",
        "post",
        "/api/v1/evaluations/",
        {"agent": "smart-triage", "task_set": "storebench/dev", "seeds": [0], "options": {"attack": "shouting"}},
        400,
        400,
    ),
    ("api", "post", "/api/v1/evaluations/", _deep_in("options", agent="smart-triage", task_set="storebench/dev", seeds=[0]), 400, 400),
    (
        "api",
        "post",
        "/api/v1/comparisons/?project=acme",
        {"base": NUL, "variants": ["x"], "task_set": "storebench/dev", "seeds": [0]},
        400,
        404,
    ),
    (
        "api",
        "post",
        "/api/v1/comparisons/?project=acme",
        {"base": "smart-triage", "variants": [LONG], "task_set": "storebench/dev", "seeds": [2**63]},
        400,
        400,
    ),
    ("api", "get", f"/api/v1/comparisons/{BIG}/", None, 404, 404),
    ("api", "get", f"/api/v1/fidelity?project=acme&max_episodes={BIG}", None, 400, 400),
    ("api", "get", "/api/v1/fidelity?project=acme&human_after=2024-02-30T00:00:00", None, 400, 400),
    ("api", "get", "/api/v1/fidelity?project=%00", None, 400, 404),
    ("api", "post", "/api/v1/episodes/{episode}/coach/", {"coach": LONG}, 400, 409),
    ("api", "post", f"/api/v1/episodes/{BIG}/coach/", {"coach": "rule-coach"}, 404, 404),
    # Issue 26: runs trained elsewhere report into an external run ({xrun}); a lab-trained run ({run}) refuses reports.
    ("api", "post", "/api/v1/runs/external/?project=acme", {"name": LONG, "recipe": "trl-sft", "base_model": "m"}, 400, 400),
    ("api", "post", "/api/v1/runs/external/?project=acme", _deep_in("config", recipe="trl-sft", base_model="m"), 400, 400),
    ("api", "post", "/api/v1/runs/external/?project=%00", {"recipe": "trl-sft", "base_model": "m"}, 400, 404),
    ("api", "post", "/api/v1/runs/{xrun}/metrics/", {"metrics": [{"step": BIG, "values": {"loss": 1.0}}]}, 400, 400),
    ("api", "post", "/api/v1/runs/{xrun}/metrics/", {"metrics": "x"}, 400, 400),
    ("api", "post", "/api/v1/runs/{xrun}/metrics/", {"metrics": [{"step": 1, "values": {NUL: 1.0}}]}, 400, 400),
    ("api", "post", "/api/v1/runs/{xrun}/metrics/", '{"metrics": [{"step": 1, "values": {"loss": NaN}}]}', 400, 400),
    ("api", "post", "/api/v1/runs/{xrun}/metrics/", {"metrics": [{"step": 1, "values": {"loss": 1.0}}], "progress": 7}, 400, 400),
    ("api", "post", "/api/v1/runs/{run}/metrics/", {"metrics": [{"step": 1, "values": {"loss": 1.0}}]}, 409, 409),
    ("api", "post", f"/api/v1/runs/{BIG}/metrics/", {"metrics": [{"step": 1, "values": {"loss": 1.0}}]}, 404, 404),
    ("api", "post", "/api/v1/runs/{xrun}/checkpoints/", {"step": -1, "path": "x", "eval_results": {}}, 400, 400),
    ("api", "post", "/api/v1/runs/{xrun}/checkpoints/", {"step": 1, "path": LONG, "eval_results": {}}, 400, 400),
    ("api", "post", "/api/v1/runs/{xrun}/finish/", {"status": "exploded"}, 400, 400),
    ("api", "post", "/api/v1/runs/{xrun}/finish/", {"status": "failed", "error": LONG}, 400, 400),
    # Issue 25: pushes between installations, what they received, and the signed inbox (no signature: 401, whatever the body).
    ("api", "post", "/api/v1/federation/transfers/", {"project": "acme", "export": BIG, "peer": NUL, "target": LONG}, 400, 404),
    ("api", "post", "/api/v1/federation/transfers/", {"project": NUL, "export": "{episode}", "peer": "p", "target": "t"}, 400, 404),
    ("api", "post", "/api/v1/federation/transfers/", _deep_in("export", project="acme"), 400, 400),
    ("api", "get", f"/api/v1/federation/received/{BIG}/", None, 400, 404),
    ("api", "post", f"/api/v1/federation/received/{HUGE}/accept/", None, 400, 404),
    ("api", "post", "/api/v1/federation/inbox/", {"project": NUL, "manifest": LONG, "payload": BIG}, 401, 401),
    ("api", "post", "/api/v1/federation/inbox/", DEEP, 401, 401),
    # Issue 23: screenshots by digest.
    ("api", "get", f"/api/v1/screenshots/{'0' * 64}?project=acme", None, 404, 404),
    ("api", "get", f"/api/v1/screenshots/{NUL}{'0' * 63}", None, 400, 400),
    ("api", "get", f"/api/v1/screenshots/{HUGE}", None, 400, 400),
    ("api", "get", f"/api/v1/screenshots/{'0' * 64}?project={BIG}", None, 404, 404),
]

CONSOLE: list[tuple[str, str, str, Any, int, int]] = [
    ("console", "get", f"/loops/{BIG}/", None, 404, 404),
    ("console", "post", f"/loops/{BIG}/promote", None, 404, 404),
    ("console", "post", f"/loops/{BIG}/cancel", None, 404, 404),
    ("console", "get", f"/uploads/{BIG}/", None, 404, 404),
    ("console", "post", "/uploads/new", {"project": NUL}, 400, 404),
    ("console", "post", "/uploads/new", {"file": LONG}, 400, 404),
    ("console", "get", f"/episodes/{BIG}/turns", None, 404, 404),
    ("console", "get", f"/episodes/{{episode}}/turns?start={BIG}", None, 400, 400),
    ("console", "post", "/evaluations/{evaluation}/improve", {"episodes": BIG, "test_seeds": NUL, "weight-anchors": "nan"}, 400, 409),
    ("console", "get", f"/episodes/{BIG}/", None, 404, 404),
    ("console", "get", "/episodes/?after=2024-02-30T00:00:00", None, 400, 400),
    ("console", "get", "/episodes/?task=%00", None, 400, 400),
    ("console", "get", f"/episodes/?seed={BIG}", None, 400, 400),
    ("console", "get", f"/episodes/{{episode}}/steps?start={BIG}", None, 400, 404),
    ("console", "get", f"/compare/?a={BIG}&b={{episode}}", None, 400, 404),
    ("console", "get", f"/compare/?a={{episode}}&b={{episode}}&start={BIG}", None, 400, 400),
    ("console", "get", f"/diagnoses/?episode={BIG}", None, 400, 400),
    ("console", "get", f"/runs/{BIG}/", None, 404, 404),
    ("console", "get", f"/runs/{BIG}/metrics.json", None, 404, 404),
    ("console", "get", f"/runs/compare?ids={BIG},{{run}}", None, 400, 400),
    ("console", "get", f"/runs/compare?ids={HUGE}", None, 400, 400),
    ("console", "get", "/runs/compare?ids={run},%00", None, 400, 400),
    ("console", "get", f"/runs/compare?ids={{run}},{LONG}", None, 400, 400),
    ("console", "get", "/runs/compare.json?ids={run},1&metric=%00", None, 400, 404),
    ("console", "get", f"/runs/compare.json?ids={{run}},1&metric={LONG}", None, 400, 404),
    ("console", "get", f"/evaluations/{BIG}/", None, 404, 404),
    ("console", "get", f"/diagnoses/jobs/{BIG}/", None, 404, 404),
    ("console", "post", "/episodes/{episode}/diagnoses", {"step_index": BIG, "category": "other", "explanation": "x"}, 400, 422),
    ("console", "post", "/episodes/{episode}/diagnoses", {"step_index": "0", "category": "other", "explanation": NUL}, 400, 422),
    (
        "console",
        "post",
        "/rollouts/new",
        {"project": "acme", "agent": "smart-triage", "task": "storebench/cash-crunch", "seed": BIG},
        400,
        422,
    ),
    (
        "console",
        "post",
        "/evaluations/new",
        {"project": "acme", "agent": "smart-triage", "task_set": "storebench/dev", "seeds": BIG},
        400,
        422,
    ),
    ("console", "post", "/runs/new", {"project": "acme", "recipe": "sft", "base_model": "tiny", "name": NUL}, 400, 422),
    ("console", "post", "/runs/new", {"project": "acme", "recipe": "sft", "base_model": "tiny", "config": DEEP}, 400, 422),
    ("console", "post", "/runs/new", {"project": "acme", "recipe": "sft", "base_model": "tiny", "name": LONG}, 400, 422),
    ("console", "post", "/runs/new", {"project": "acme", "recipe": "sft", "base_model": LONG}, 400, 422),
    ("console", "post", "/rollouts/new", {"project": "acme", "agent": LONG, "task": "storebench/cash-crunch", "seed": "0"}, 400, 422),
    ("console", "post", "/episodes/{episode}/diagnoses", {"step_index": "0", "category": LONG, "explanation": "x"}, 400, 422),
    ("console", "get", f"/diagnoses/{BIG}/edit", None, 404, 404),
    ("console", "post", "/diagnoses/{diagnosis}/edit", {"step_index": BIG, "category": "other", "explanation": "x"}, 400, 422),
    ("console", "post", "/diagnoses/{diagnosis}/edit", {"step_index": "0", "category": LONG, "explanation": "x"}, 400, 422),
    ("console", "post", "/diagnoses/{diagnosis}/edit", {"step_index": "0", "category": "other", "explanation": NUL}, 400, 422),
    ("console", "post", f"/runs/{{run}}/checkpoints/{BIG}/evaluate", {"task_set": "toyenv/eval", "seeds": "0"}, 404, 404),
    ("console", "post", "/evaluations/demo", {"project": NUL}, 400, 404),
    ("console", "get", f"/fidelity/?project=acme&max_episodes={BIG}", None, 400, 400),
    ("console", "get", f"/evaluations/comparisons/{BIG}/", None, 404, 404),
    ("console", "post", f"/federation/received/{BIG}/accept", None, 400, 404),
    ("console", "post", f"/federation/received/{HUGE}/reject", None, 400, 404),
    (
        "console",
        "post",
        "/evaluations/comparisons/new",
        {"project": "acme", "base": NUL, "variants": LONG, "task_set": "x", "seeds": BIG},
        400,
        422,
    ),
]

PLAY: list[tuple[str, str, str, Any, int, int]] = [
    ("play", "post", "/play/", {"project": "acme", "task": "storebench/cash-crunch", "seed": BIG}, 400, 400),
    ("play", "post", "/play/", {"project": "acme", "task": "storebench/cash" + NUL, "seed": "0"}, 400, 400),
    ("play", "post", "/play/", {"project": LONG, "task": LONG, "seed": "0"}, 400, 400),
    ("play", "post", f"/play/{BIG}/submit", {"tool": "get_finance", "expected_index": "1"}, 404, 404),
    ("play", "post", "/play/{session}/submit", {"tool": "get_finance", "expected_index": BIG}, 400, 409),
    ("play", "post", "/play/{session}/submit", {"tool": NUL, "expected_index": "1"}, 400, 400),
    ("play", "post", "/play/{session}/submit", {"tool": "set_price", "expected_index": "1", "sku": NUL, "price": "1e400"}, 400, 422),
    ("play", "post", "/play/{session}/submit", {"tool": "create_purchase_order", "expected_index": "1", "lines": DEEP}, 400, 422),
    ("play", "get", f"/play/{BIG}/", None, 404, 404),
    ("play", "post", f"/play/{BIG}/reply", {"message": "hi", "expected_index": "1"}, 404, 404),
    ("play", "post", "/play/{session}/reply", {"message": NUL, "expected_index": BIG}, 400, 409),
    ("play", "post", "/play/{session}/submit", {"message": LONG, "expected_index": "1"}, 400, 422),
    ("play", "post", "/play/", {"project": "acme", "task": "storebench/cash-crunch", "seed": "0", "seat": "user", "agent": NUL}, 400, 400),
]

WEBSOCKET: list[tuple[str, str]] = [
    ("unknown episode", f"/ws/episodes/{BIG}/"),
    ("unknown run", f"/ws/runs/{HUGE}/"),
    ("after past int64", "/ws/episodes/{episode}/?after=" + BIG),
    ("after not a number", "/ws/episodes/{episode}/?after=abc"),
    ("after with NUL", "/ws/episodes/{episode}/?after=%00"),
]


@pytest.fixture
def world(db: Any, alice: Any, project_a: Any, record_factory: Any) -> dict[str, Any]:
    from lab.diagnoses.models import Diagnosis
    from lab.play.services import play_session_start
    from lab.rollouts.models import Evaluation
    from lab.runs.models import Checkpoint, TrainingRun
    from lab.trajectories.models import AgentConfig
    from lab.trajectories.services import episodes_ingest

    [outcome] = episodes_ingest(project=project_a, records=[record_factory(steps=3)], user=alice)
    agent = AgentConfig.objects.create(project=project_a, name="smart-triage", kind="scripted", model="smart-triage")
    run = TrainingRun.objects.create(project=project_a, name="run", recipe="sft", base_model="tiny")
    xrun = TrainingRun.objects.create(
        project=project_a, name="xrun", recipe="trl-sft", base_model="m", provenance="upload", status="running"
    )
    Checkpoint.objects.create(run=run, step=10, path="ckpt-10")
    evaluation = Evaluation.objects.create(project=project_a, agent=agent, task_set="toyenv/eval", seeds=[0])
    session = play_session_start(user=alice, project=project_a, task_id="storebench/cash-crunch", seed=0)
    diagnosis = Diagnosis.objects.create(episode=outcome.episode, step_index=1, category="wrong_tool", explanation="x")
    return {
        "episode": outcome.episode.pk,
        "run": run.pk,
        "evaluation": evaluation.pk,
        "session": session.pk,
        "diagnosis": diagnosis.pk,
        "xrun": xrun.pk,
    }


@pytest.fixture(autouse=True)
def _no_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    from celery.app.task import Task

    monkeypatch.setattr(Task, "apply_async", lambda self, *a, **k: None)


def _fill(value: Any, world: dict[str, Any]) -> Any:
    if isinstance(value, str):
        for name, pk in world.items():
            value = value.replace("{" + name + "}", str(pk))
        return int(value) if value.isdigit() and len(value) < 30 and value != BIG else value
    if isinstance(value, dict):
        return {k: _fill(v, world) for k, v in value.items()}
    return value


def _ids(rows: list[tuple[Any, ...]]) -> list[str]:
    return [f"{r[0]}-{r[1]}-{r[2][:60]}-{i}" for i, r in enumerate(rows)]


@pytest.mark.parametrize(("surface", "method", "url", "payload", "low", "high"), API + CONSOLE + PLAY, ids=_ids(API + CONSOLE + PLAY))
def test_bad_input_answers_a_client_error(
    client: Any, alice: Any, alice_api: Any, world: dict[str, Any], surface: str, method: str, url: str, payload: Any, low: int, high: int
) -> None:
    url = _fill(url, world)
    if surface == "api":
        if isinstance(payload, str):
            response = getattr(alice_api, method)(url, data=payload, content_type="application/json")
        else:
            # As a client's JSON library writes it: NUL and lone surrogates as \u escapes.
            body = json.dumps(_fill(payload, world)) if payload is not None else None
            response = getattr(alice_api, method)(url, data=body, content_type="application/json")
    else:
        client.force_login(alice)
        response = getattr(client, method)(url, data=payload) if payload is not None else getattr(client, method)(url)
    assert low <= response.status_code <= high, (response.status_code, response.content[:500])
    if surface == "api":
        body = response.json()
        assert set(body) == {"error"} and isinstance(body["error"]["code"], str) and body["error"]["message"], body


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("name", "path"), WEBSOCKET, ids=[w[0] for w in WEBSOCKET])
def test_bad_websocket_urls_are_closed_with_a_4xxx_code(alice: Any, project_a: Any, record_factory: Any, name: str, path: str) -> None:
    from lab.trajectories.services import episodes_ingest

    [outcome] = episodes_ingest(project=project_a, records=[record_factory(steps=1)], user=alice)
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path.replace("{episode}", str(outcome.episode.pk)))
    communicator.scope["user"] = alice

    async def scenario() -> Any:
        connected, code = await communicator.connect(timeout=5)
        await communicator.disconnect()
        return connected, code

    connected, code = async_to_sync(scenario)()
    assert not connected and 4400 <= code <= 4404, (connected, code)
