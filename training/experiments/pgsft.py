"""PG-SFT against SFT and its two usual guards against forgetting, on scripted demonstrations of toolgym/chain.

    python -m training.experiments pgsft --smoke
    python -m training.experiments pgsft --base base-small     # no teacher: the privileged context is the outcome

Every arm is the sft recipe on the same demonstrations (the expert's chain episodes on training seeds that neither
the zoo's SFT, seeds from 0, nor its corpus, seeds 10,000-19,999, used), made by `prepare_demonstrations` and
cached under var/experiments/data/ with their content hash in the file name, so the runner's config hash changes
whenever the demonstrations do. The arms differ in one field each: pgsft weighs each turn by its information gain
under the start model (training/info_gain.py), sft_kl adds a KL penalty to the start model, sft_small_lr trains
at a quarter of the learning rate.

Besides the target's reward and pass rate, `pgsft_measures` reports per checkpoint: retention on a non-target
task (toolgym/lookup, greedy, the test seeds: pass rate and valid-call rate), the NLL per token of held-out text
(scripted episodes of the other toolgym tasks and of Phantom's dev split on held-out seeds, rendered through the
chat template in the base's prompt style, as the zoo's corpus renders its documents) and the drift on that text,
the mean KL(model || start model) per token.
"""

from __future__ import annotations

from typing import Any

from environments.records import record_score
from training.experiments import Arm, Evaluation, Experiment, register

TARGET = "toolgym/chain"
RETENTION_TASK = "toolgym/lookup"
DEMO_SEEDS = range(20_000, 20_064)  # training seeds, disjoint from the zoo's SFT demonstrations and corpus
TEXT_TASKS = ("toolgym/lookup", "toolgym/echo", "phantom/lookup-dev")
TEXT_SEEDS = range(300_000, 300_004)  # held-out seeds for the text; far from the evaluation's test seeds
TEXT_MAX_TOKENS = 1024
LEARNING_RATE = 1e-3


def prepare_demonstrations(experiment: Experiment, values: dict[str, Any]) -> dict[str, Any]:
    """Experiment.prepare: the expert's passed TARGET episodes on DEMO_SEEDS as JSONL under var/ -> {"data": path}."""
    from training.scripted import demonstrations_file

    return {"data": demonstrations_file(TARGET, DEMO_SEEDS, max_turns=8)}


def heldout_documents(tokenizer: Any, style: Any) -> list[list[int]]:
    """Token ids of the held-out text: each TEXT_TASKS episode on TEXT_SEEDS, rendered whole, cut to TEXT_MAX_TOKENS."""
    from training.data import encode_text, record_messages, render_chat
    from training.scripted import scripted_episode
    from training.zoo.corpus import demo_policy

    documents = []
    for task in TEXT_TASKS:
        for seed in TEXT_SEEDS:
            record = scripted_episode(demo_policy(task, seed), task, seed, max_turns=12)
            text = render_chat(tokenizer, record_messages(record, style=style), style.template_tools(record["header"]["tools"]))
            documents.append(encode_text(tokenizer, text)[:TEXT_MAX_TOKENS])
    return documents


def text_nll_and_drift(model: Any, start: Any, documents: list[list[int]]) -> tuple[float, float]:
    """(NLL per token under `model`, mean KL(model || start) per token) over every next-token position of the documents."""
    import torch

    from training.losses import kl_full, sft_loss
    from training.modeling import forward_logits

    device = next(model.parameters()).device
    nll, kl, tokens = 0.0, 0.0, 0.0
    with torch.no_grad():
        for ids in documents:
            input_ids = torch.tensor([ids], device=device)
            attention, mask = torch.ones_like(input_ids), torch.ones(1, len(ids) - 1, device=device)
            logits = forward_logits(model, input_ids, attention)[:, :-1]
            _, m = sft_loss(logits, input_ids[:, 1:], mask)
            _, k = kl_full(logits, forward_logits(start, input_ids, attention)[:, :-1], mask, direction="reverse")
            nll, kl, tokens = nll + m["nll"] * m["tokens"], kl + k["reverse_kl"] * k["tokens"], tokens + m["tokens"]
    return nll / max(tokens, 1.0), kl / max(tokens, 1.0)


def pgsft_measures(checkpoint: str, base: str, values: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """Experiment.measures: retention on RETENTION_TASK (greedy, `seeds`), held-out text NLL and drift from `base`."""
    import torch

    from training.experiments.runner import load_checkpoint, prompt_style_of
    from training.modeling import load_model
    from training.sampling import rollout_episodes

    style = prompt_style_of(base, values)
    model, tokenizer = load_checkpoint(checkpoint, base)  # a LoRA run's adapter over the base, too
    start = model if checkpoint == base else load_model(base, trainable=False)[0]
    ev = EXPERIMENT.evaluation
    with torch.no_grad():
        records = rollout_episodes(
            model,
            tokenizer,
            [(RETENTION_TASK, s) for s in seeds],
            max_turns=ev.max_turns,
            max_new_tokens=ev.max_new_tokens,
            temperature=0.0,
            style=style,
        )
    valid = sum(r["header"]["metrics"]["valid_calls"] for r in records)
    calls = valid + sum(r["header"]["metrics"]["invalid_calls"] for r in records)
    nll, drift = text_nll_and_drift(model, start, heldout_documents(tokenizer, style))
    return {
        "lookup_passed": sum(float(bool(record_score(r)["passed"])) for r in records) / len(records),
        "lookup_valid_calls": valid / max(calls, 1),
        "heldout_text_nll": nll,
        "drift_kl_to_start": drift,
    }


EXPERIMENT = register(
    Experiment(
        name="pgsft",
        question="Does weighting each demonstrated turn by how much the outcome changes the start model's prediction of it "
        "(PG-SFT) learn toolgym/chain as well as SFT while forgetting less (lookup, held-out text, drift), compared with "
        "SFT, SFT with a KL penalty to the start model and SFT at a quarter of the learning rate?",
        method="pgsft",
        arms=(
            Arm(
                "pgsft",
                "sft",
                {"turn_weighting": "info_gain", "info_gain_temperature": 0.02, "info_gain_floor": 0.2},
                "turns weighted by information gain under the start model (softmax, temperature 0.02 nats, floor 0.2)",
            ),
            Arm("sft", "sft", {}, "SFT on the demonstrations"),
            Arm("sft_kl", "sft", {"kl_coef": 0.5}, "SFT + 0.5 x KL(model || start) per trained token"),
            Arm("sft_small_lr", "sft", {"learning_rate": LEARNING_RATE / 4}, "SFT at a quarter of the learning rate"),
        ),
        shared={
            "max_steps": 8,  # sized to this session's CPU (2 shared cores): each run ~1-2 min with its measures
            "batch_size": 8,
            "learning_rate": LEARNING_RATE,  # in shared, not in a tuning grid: a grid point would override sft_small_lr's
            "max_tokens": 1024,
        },
        evaluation=Evaluation(task=TARGET, dev_seeds=(50_000, 50_032), test_seeds=(100_000, 100_064), max_turns=4, max_new_tokens=48),
        measures="training.experiments.pgsft:pgsft_measures",
        prepare="training.experiments.pgsft:prepare_demonstrations",
        train_seeds=(0, 1, 2),
        smoke={"max_steps": 2, "batch_size": 2, "eval_episodes": 2},
        needs_teacher=False,
    )
)
