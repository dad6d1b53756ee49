"""How long every environment's prompt gets in SmolLM2's 8k context, and what the shared truncation makes of it.

    python benchmarks/prompts.py [--model var/models/smollm2-135m-instruct] [--budget 8032]

For each environment, its default anchor plays one held-out episode (through environments.runner, so a service-desk
caller speaks). The episode is rendered as the real model's agents see it (training.data.record_messages in the
store model's prompt style: compact tool listing, results cut), and the prompt before every agent turn is
tokenized with the model's chat template. Printed: the tools listed, the prompt's tokens at the first turn and at
the longest turn, and the longest one after the one truncation rule (training.context.truncate_messages, as the
harness and the sampler apply it) at --budget tokens: its tokens and the turns it omitted. The budget's default
is the 8,192-token context less the console agent's 160 new tokens.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[1]
# (label, task, turns): the zero-shot suites' first tasks, and a full StoreBench store with its 29 tools
CASES = (
    ("storebench (35-day store)", "storebench/payment-outage", 400),
    ("storebench-short", "storebench-short/payment-outage-2d", 60),
    ("servicedesk", "servicedesk/roaming-on", 40),
    ("phantom", "phantom/bridge-test", 20),
    ("optionsdesk", "optionsdesk/oos-short", 60),
    ("workdesk", None, 30),
    ("desktop", None, 30),
    ("toolgym", "toolgym/chain", 10),
)


def first_test_task(env: str) -> str:
    from environments.registry import list_tasks

    tasks = list_tasks(env)
    return next((t.id for t in tasks if t.split == "test"), tasks[0].id)


def measure(task: str, turns: int, tokenizer: Any, budget: int) -> dict[str, Any]:
    from environments.registry import env_meta, make
    from environments.runner import make_policy, run_episode
    from training.context import truncate_messages
    from training.data import record_messages
    from training.sampling import system_prompt_for
    from training.zoo import prompt_style_for

    style = prompt_style_for(REPO / "var/models/smollm2-135m-instruct")
    env_name, seed = task.split("/")[0], 100_000
    env = make(task, seed)
    anchor = env_meta(env_name).default_anchor or "do-nothing"
    record = run_episode(env, make_policy(anchor, env, seed), max_steps=turns, harness={"system_prompt": system_prompt_for(env)})
    messages = [{k: v for k, v in m.items() if not k.startswith("_")} for m in record_messages(record, style=style)]

    def tokens(prompt: list[dict[str, Any]]) -> int:
        text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    # A prompt only grows from turn to turn (results are cut, nothing is removed before truncation): the first agent
    # turn's prompt is the shortest and the last one's the longest.
    turn_starts = [i for i, m in enumerate(messages) if m["role"] == "assistant"] or [len(messages)]
    longest = messages[: turn_starts[-1]]
    cut, omitted = truncate_messages(longest, fits=lambda prompt: tokens(prompt) <= budget)
    return {
        "anchor": anchor,
        "tools": len(record["header"].get("tools") or []),
        "turns": len(turn_starts),
        "first": tokens(messages[: turn_starts[0]]),
        "longest": tokens(longest),
        "cut": tokens(cut),
        "omitted": omitted,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(REPO / "var/models/smollm2-135m-instruct"))
    parser.add_argument("--budget", type=int, default=8192 - 160)
    args = parser.parse_args()
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    print(f"prompt tokens in {Path(args.model).name}'s chat template, compact tools, results cut; budget {args.budget:,}")
    print(
        f"{'environment':<27} {'task':<38} {'anchor':<13} {'tools':>5} {'turns':>5} {'first':>7} {'longest':>8} {'after cut':>9} {'omitted':>7}"
    )
    for label, task, turns in CASES:
        task = task or first_test_task(label)
        started = time.perf_counter()
        r = measure(task, turns, tokenizer, args.budget)
        print(
            f"{label:<27} {task:<38} {r['anchor']:<13} {r['tools']:>5} {r['turns']:>5} {r['first']:>7,} {r['longest']:>8,} "
            f"{r['cut']:>9,} {r['omitted']:>7}  ({time.perf_counter() - started:.0f} s)"
        )


if __name__ == "__main__":
    main()
