"""python -m environments list | tools ENV | run ENV/TASK --seed N --policy NAME [--attack STYLE] [--guidance] [--out FILE.jsonl]
                          [--critic NAME --critic-every K --critic-on-error --critic-on-request] [--consultant NAME --consult-cost C]
                          [--harness-level full|guided|light|tools-only]   (a team: `run` then also prints "roles" and "reward")
                          | replay FILE.jsonl | calibrate ENV [--heldout-seeds 1000-1009] [--tasks a,b] | contract [ENV] | mcp ENV/TASK --seed N [--out FILE.jsonl]
                          | workflow ENV/TASK --plan PLAN.json --role NAME=POLICY ... [--seed N] [--out FILE.jsonl]
                          (run and mcp also take --option KEY=VALUE, repeatable, and --engine VERSION)
                          | attack-eval TASK_SET --anchors A,B --seeds 1000-1004 [--styles S,T]

`run` prints one JSON line; `replay` prints one JSON line per record and exits 1 on the first divergence,
naming the step. Errors go to stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from environments.attacks import report_of
from environments.core import Env, EnvError, Policy
from environments.meta import load_target
from environments.records import header_score
from environments.registry import env_meta, list_tasks, make
from environments.roles import HARNESS_LEVELS, RoleSpec, Team
from environments.seeds import SeedError, seed_parse, seeds_parse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m environments", description="Practicum environments: list, inspect, run, replay, calibrate, serve."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="one task a line: id, split, horizon")
    tools = sub.add_parser("tools", help="the JSON array of OpenAI function schemas of an environment")
    tools.add_argument("env", help="environment name (storebench) or a task id")
    run = sub.add_parser("run", help="play one episode with a scripted policy")
    run.add_argument("task", help="task id, e.g. storebench/heat-wave")
    run.add_argument("--seed", type=_seed, default=0, help="a signed 64-bit integer")
    run.add_argument("--policy", default="smart-triage")
    run.add_argument("--out", help="append the trajectory record to this JSONL file")
    run.add_argument("--attack", help="plant instructions in this style (the environment's attack axis); none: unattacked")
    run.add_argument("--guidance", action="store_true", help="give benign guidance through third-party text")
    _episode_arguments(run)
    _team_arguments(run)
    attack = sub.add_parser("attack-eval", help="benign utility, utility under attack, ASR and guidance compliance of anchors")
    attack.add_argument("task_set", help="e.g. storebench/dev or one task id")
    attack.add_argument("--anchors", default="smart-triage", help="comma-separated scripted policies")
    attack.add_argument("--seeds", type=_seeds, default=[1000, 1001, 1002], help="held-out seeds, e.g. 1000-1004 or 1000,1001")
    attack.add_argument("--styles", help="comma-separated attack styles (default: all the axis has)")
    flow = sub.add_parser("workflow", help="play a workflow episode: a plan (environments.workflow format) carried out by role policies")
    flow.add_argument("task")
    flow.add_argument("--plan", required=True, help="the workflow JSON file the scripted generator emits")
    flow.add_argument(
        "--role", action="append", default=[], type=_option, metavar="NAME=POLICY", help="a role of the plan and its scripted policy"
    )
    flow.add_argument("--seed", type=_seed, default=0, help="a signed 64-bit integer")
    flow.add_argument("--out", help="append the trajectory record to this JSONL file")
    replay = sub.add_parser("replay", help="replay every record of a JSONL file and verify the state-hash chain")
    replay.add_argument("file")
    calibrate = sub.add_parser("calibrate", help="run anchors x scenarios x seeds and write thresholds (and held-out pass rates)")
    calibrate.add_argument("env")
    calibrate.add_argument("--workers", type=int, default=2)
    calibrate.add_argument("--heldout-seeds", help="unseen seeds to report pass rates on, e.g. 1000-1009 (environments that have them)")
    calibrate.add_argument("--tasks", help="comma-separated task keys to calibrate (default: all)")
    contract = sub.add_parser("contract", help="run the contract check over registered tasks")
    contract.add_argument("env", nargs="?")
    mcp = sub.add_parser("mcp", help="serve one episode's tools over stdio (Model Context Protocol)")
    mcp.add_argument("task")
    mcp.add_argument("--seed", type=_seed, default=0, help="a signed 64-bit integer")
    mcp.add_argument("--out", help="write the trajectory record here when the episode ends or the client leaves")
    _episode_arguments(mcp)
    return parser


def _episode_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        type=_option,
        metavar="KEY=VALUE",
        help="an episode option the environment declares (e.g. reward=daily); VALUE is read as JSON, else as text",
    )
    parser.add_argument("--engine", help="an older engine version the environment still runs (e.g. 1.0.0); default: the current one")


def _team_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--critic", help="a scripted policy as the critic (e.g. rule-critic); every 5 actor steps unless a --critic-* flag says when"
    )
    parser.add_argument("--critic-every", type=_count, default=0, metavar="K", help="the critic advises after every K actor steps")
    parser.add_argument("--critic-on-error", action="store_true", help="the critic advises after an actor step whose call failed")
    parser.add_argument("--critic-on-request", action="store_true", help="the actor gets an ask_critic tool")
    parser.add_argument("--consultant", help="a scripted policy the actor may consult through a consult tool (e.g. oracle)")
    parser.add_argument("--consult-cost", type=_cost, default=0.0, metavar="C", help="what one consultation costs, in [0, 1]")
    parser.add_argument("--harness-level", choices=HARNESS_LEVELS, default="tools-only", help="what the harness does for the actor")


def _count(raw: str) -> int:
    if not raw.isdigit():
        raise argparse.ArgumentTypeError(f"{raw!r} is not a whole number >= 0")
    return int(raw)


def _cost(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a cost within [0, 1]")
    return value


def team_of(args: argparse.Namespace, env: Env, actor: Policy, seed: int) -> Team:
    """The team the run flags ask for (a plain actor when none is given); scripted role policies by name."""
    from environments.runner import make_policy

    if not args.critic and (args.critic_every or args.critic_on_error or args.critic_on_request):
        raise EnvError("no_critic", "--critic-every, --critic-on-error and --critic-on-request need --critic NAME")
    if args.consult_cost and not args.consultant:
        raise EnvError("no_consultant", "--consult-cost needs --consultant NAME")
    critic = consultant = None
    if args.critic:
        every = args.critic_every if args.critic_every or args.critic_on_error or args.critic_on_request else 5
        policy = make_policy(args.critic, env, seed)
        critic = RoleSpec(policy=policy, every=every, on_error=args.critic_on_error, on_request=args.critic_on_request)
    if args.consultant:
        consultant = RoleSpec(policy=make_policy(args.consultant, env, seed), cost=args.consult_cost)
    return Team(actor=actor, critic=critic, consultant=consultant, harness_level=args.harness_level)


def _option(raw: str) -> tuple[str, Any]:
    key, sep, value = raw.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{raw!r} is not KEY=VALUE")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def _seed(raw: str) -> int:
    """argparse type: a seed within the range the lab stores (environments.seeds), refused by argparse otherwise."""
    try:
        return seed_parse(raw)
    except SeedError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seeds(raw: str) -> list[int]:
    try:
        return seeds_parse(raw)
    except SeedError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _tools(env_name: str) -> list[dict[str, Any]]:
    task_id = env_name if "/" in env_name else next((t.id for t in list_tasks(env_name)), None)
    if task_id is None:
        raise EnvError("unknown_env", f"no environment {env_name!r}; `python -m environments list` shows the tasks")
    return [t.openai_schema() for t in make(task_id, seed=0).tools()]


def run_options(attack: str | None, guidance: bool, extra: list[tuple[str, Any]] | None = None) -> dict[str, Any] | None:
    """The episode options the run flags ask for (the attack axis' generic option names, then each --option);
    None for none."""
    options: dict[str, Any] = dict(extra or [])
    if attack is not None:
        options["attack"] = attack
    if guidance:
        options["guidance"] = True
    return options or None


def command_run(
    task: str,
    seed: int,
    policy_name: str,
    out: str | None,
    options: dict[str, Any] | None = None,
    version: str | None = None,
    team_args: argparse.Namespace | None = None,
) -> dict[str, Any]:
    from environments.runner import make_policy, run_episode

    env = make(task, seed=seed, options=options, version=version)
    policy = make_policy(policy_name, env, seed)
    team = team_of(team_args, env, policy, seed) if team_args is not None else Team(actor=policy)
    started = time.perf_counter()
    record = run_episode(env, team)
    wall = time.perf_counter() - started
    if out:
        with open(out, "a") as handle:
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")
    header = record["header"]
    last_end = next((s["sim_time_end"] for s in reversed(record["steps"]) if s.get("sim_time_end") is not None), 0.0)
    return {
        "env": header["env"],
        "env_version": header["env_version"],
        "task": header["task"],
        "seed": seed,
        "policy": policy_name,
        "composite": header_score(header)["composite"],
        "passed": header_score(header)["passed"],
        "termination_reason": header["termination_reason"],
        "steps": len(record["steps"]) - 1,
        "sim_days": int(last_end // 1440),
        "wall_s": round(wall, 3),
        **({"options": header["options"]} if header.get("options") else {}),
        **({"attack": attack} if (attack := report_of(header_score(header))) is not None else {}),
        **(
            {"harness_level": header["team"]["harness_level"], "roles": header["roles"], "reward": header["reward"]}
            if "team" in header
            else {}
        ),
    }


def command_workflow(task: str, seed: int, plan_path: str, roles: dict[str, Any], out: str | None) -> dict[str, Any]:
    """One workflow episode with a scripted generator (the plan file) and scripted role policies."""
    from environments.runner import make_policy
    from environments.workflow import ScriptedGenerator, role_rewards, run_workflow

    try:
        with open(plan_path) as handle:
            plan = json.load(handle)
    except (OSError, json.JSONDecodeError) as exc:
        raise EnvError("bad_plan", f"--plan {plan_path}: {exc}") from None
    env = make(task, seed=seed)
    team = {name: make_policy(str(policy), env, seed) for name, policy in roles.items()}
    record = run_workflow(env, ScriptedGenerator(plan), team)
    if out:
        with open(out, "a") as handle:
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")
    header = record["header"]
    workflow = header.get("workflow") or {}
    return {
        "task": task,
        "seed": seed,
        "composite": header_score(header)["composite"],
        "termination_reason": header["termination_reason"],
        "nodes": [{k: n.get(k) for k in ("id", "role", "status", "steps")} for n in workflow.get("nodes", [])],
        "role_rewards": role_rewards(record),
        **({"error": header["termination_cause"]} if header.get("termination_cause") else {}),
    }


def command_replay(path: str) -> int:
    from environments.replay import replay_record

    with open(path) as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            record = json.loads(line)
            started = time.perf_counter()
            report = replay_record(record)
            report.update(
                line=line_no, task=f"{record['header']['env']}/{record['header']['task']}", wall_s=round(time.perf_counter() - started, 3)
            )
            print(json.dumps(report))
            if report.get("refused"):  # a dreamed record: skipped, with the reason, not a divergence
                print(f"record on line {line_no}: {report['refused']}", file=sys.stderr)
                continue
            if not report["ok"]:
                print(f"divergence in record on line {line_no} at step {report['divergence']['step']}", file=sys.stderr)
                return 1
    return 0


def calibration_module(env: str) -> Any:
    """The module whose calibrate() and table_markdown() calibrate `env` (EnvMeta.calibration); EnvError when it has none."""
    target = env_meta(env).calibration
    if not target:
        raise EnvError("no_calibration", f"environment {env!r} has no calibration module")
    return load_target(target)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            for task in list_tasks():
                print(f"{task.id}\t{task.split}\t{task.horizon}")
        elif args.command == "tools":
            print(json.dumps(_tools(args.env), indent=1))
        elif args.command == "run":
            options = run_options(args.attack, args.guidance, args.option)
            print(json.dumps(command_run(args.task, args.seed, args.policy, args.out, options, args.engine, team_args=args)))
        elif args.command == "attack-eval":
            from environments.attack_eval import attack_eval, table_markdown

            styles = args.styles.split(",") if args.styles else None
            result = attack_eval(args.task_set, anchors=args.anchors.split(","), seeds=args.seeds, styles=styles)
            print(f"{args.task_set}, seeds {args.seeds[0]}-{args.seeds[-1]}, {result['episodes']} episodes")
            print(table_markdown(result))
        elif args.command == "workflow":
            print(json.dumps(command_workflow(args.task, args.seed, args.plan, dict(args.role), args.out)))
        elif args.command == "replay":
            return command_replay(args.file)
        elif args.command == "calibrate":
            module = calibration_module(args.env)
            # Only options the user gave are passed on: not every environment's calibrate takes them.
            extras = {"heldout_seeds": args.heldout_seeds, "tasks": args.tasks and args.tasks.split(",")}
            result = module.calibrate(workers=args.workers, **{k: v for k, v in extras.items() if v})
            print(getattr(module, "report_markdown", module.table_markdown)(result))
        elif args.command == "contract":
            from environments.contract import check_task

            failed = 0
            for task in list_tasks(args.env):
                problems = check_task(task.id)
                failed += bool(problems)
                print(json.dumps({"task": task.id, "ok": not problems, "problems": problems}))
            return 1 if failed else 0
        elif args.command == "mcp":
            from environments.mcp_server import serve

            serve(args.task, args.seed, args.out, options=run_options(None, False, args.option), version=args.engine)
    except EnvError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    except SeedError as exc:  # a calibration's --heldout-seeds text, parsed by the environment's own calibrate()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
