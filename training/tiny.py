"""The tiny-model factory: a Qwen3-architecture model from a config and a byte-level BPE tokenizer trained here.

    path = build_tiny_model("/tmp/tiny", seed=0)          # writes config, weights, tokenizer, chat template
    model = AutoModelForCausalLM.from_pretrained(path); tok = AutoTokenizer.from_pretrained(path)

Nothing is downloaded. The tokenizer is trained in-process on a small corpus that contains the chat template's
own markup and tool-call JSON, so a 2-layer model can learn to emit `<tool_call>{...}</tool_call>` quickly.
The chat template is Qwen-style, tool-aware, and marks assistant turns with `{% generation %}` so
`apply_chat_template(..., return_assistant_tokens_mask=True)` works. Tests and the rollout policies share it.
"""

from __future__ import annotations

import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path

SPECIAL_TOKENS: tuple[str, ...] = (
    "<|pad|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
)
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|pad|>"

# An assistant turn in ChatML: its text, then each call as <tool_call>{json}</tool_call> (what training.toolcall_parse
# reads), inside generation markers for exact assistant masks. Shared by the tiny template and the packaged model's
# (training.model_store.TOOL_CHAT_TEMPLATE).
ASSISTANT_TURN = (
    "{% elif message.role == 'assistant' %}<|im_start|>assistant\n{% generation %}"
    "{{ message.content or '' }}"
    "{% for call in message.tool_calls or [] %}"
    '<tool_call>{"name": "{{ call.function.name }}", "arguments": '
    "{% if call.function.arguments is string %}{{ call.function.arguments }}{% else %}{{ call.function.arguments | tojson }}{% endif %}"
    "}</tool_call>"
    "{% endfor %}<|im_end|>{% endgeneration %}{{ '\\n' }}"
)

# Qwen-style, tool-aware. Each tool result is its own "tool" turn; assistant bodies sit inside generation markers
# (the trailing newline after <|im_end|> is template glue, not something the model generates).
CHAT_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n"
    "{% if messages and messages[0].role == 'system' %}{{ messages[0].content }}\n\n{% endif %}"
    '# Tools\nCall a tool as <tool_call>{"name": NAME, "arguments": {...}}</tool_call>. Tools:\n<tools>\n'
    "{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}</tools><|im_end|>\n"
    "{% elif messages and messages[0].role == 'system' %}<|im_start|>system\n{{ messages[0].content }}<|im_end|>\n"
    "{% endif %}"
    "{% for message in messages %}"
    "{% if message.role == 'system' and loop.first %}"
    + ASSISTANT_TURN
    + "{% elif message.role == 'tool' %}<|im_start|>tool\n<tool_response>{{ message.content }}</tool_response><|im_end|>\n"
    "{% else %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_WORDS = [
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "it",
    "you",
    "that",
    "for",
    "on",
    "with",
    "as",
    "are",
    "this",
    "be",
    "at",
    "have",
    "from",
    "or",
    "one",
    "by",
    "not",
    "what",
    "all",
    "were",
    "when",
    "we",
    "there",
    "can",
    "an",
    "your",
    "which",
    "their",
    "said",
    "if",
    "do",
    "will",
    "each",
    "about",
    "how",
    "up",
    "out",
    "them",
    "then",
    "she",
    "many",
    "some",
    "so",
    "these",
    "would",
    "other",
    "into",
    "has",
    "more",
    "her",
    "two",
    "like",
    "him",
    "see",
    "time",
    "could",
    "no",
    "make",
    "than",
    "first",
    "been",
    "its",
    "who",
    "now",
    "people",
    "my",
    "made",
    "over",
    "did",
    "down",
    "only",
    "way",
    "find",
    "use",
    "may",
    "water",
    "long",
    "little",
    "very",
    "after",
    "words",
    "called",
    "just",
    "where",
    "most",
    "know",
    "get",
    "through",
    "back",
    "much",
    "go",
    "good",
    "new",
    "write",
    "our",
    "me",
    "man",
    "too",
    "any",
    "day",
    "same",
    "right",
    "look",
    "think",
    "also",
    "around",
    "another",
    "came",
    "come",
    "work",
    "three",
    "word",
    "must",
    "because",
    "does",
    "part",
    "even",
    "place",
    "well",
    "such",
    "here",
    "take",
    "why",
    "things",
    "help",
    "put",
    "years",
    "different",
    "away",
    "again",
    "off",
    "went",
    "old",
    "number",
    "great",
    "tell",
    "men",
    "say",
    "small",
    "every",
    "found",
    "still",
    "between",
    "name",
    "should",
    "home",
    "big",
    "give",
    "air",
    "line",
    "set",
    "own",
    "under",
    "read",
    "last",
    "never",
    "us",
    "left",
    "end",
    "along",
    "while",
    "might",
    "next",
    "sound",
    "below",
    "saw",
    "something",
    "thought",
    "both",
    "few",
    "those",
    "always",
    "looked",
    "show",
    "large",
    "often",
    "together",
    "asked",
    "house",
    "world",
    "going",
    "want",
    "school",
    "important",
    "until",
    "form",
    "food",
    "keep",
    "children",
    "feet",
    "land",
    "side",
    "without",
    "boy",
    "once",
    "animals",
    "life",
    "enough",
    "took",
    "sometimes",
    "four",
    "head",
    "above",
    "kind",
    "began",
    "almost",
    "live",
    "page",
    "got",
    "earth",
    "need",
    "far",
    "hand",
    "high",
    "year",
    "mother",
    "light",
    "parts",
    "country",
    "father",
    "let",
    "night",
    "following",
    "picture",
    "being",
    "study",
    "second",
    "eyes",
    "soon",
    "times",
    "story",
    "boys",
    "since",
    "white",
    "days",
    "ever",
    "paper",
    "hard",
    "near",
    "sentence",
    "better",
    "best",
    "across",
    "during",
    "today",
    "others",
    "sure",
    "means",
    "knew",
    "its",
    "try",
    "told",
    "young",
    "miles",
    "sun",
    "ways",
    "thing",
    "whole",
    "hear",
    "example",
    "heard",
    "several",
    "change",
    "answer",
    "room",
    "sea",
    "against",
    "top",
    "turned",
    "learn",
    "point",
    "city",
    "play",
    "toward",
    "five",
    "using",
    "himself",
    "usually",
    "order",
    "price",
    "stock",
    "item",
    "store",
    "supplier",
    "inventory",
    "shelf",
    "customer",
    "sales",
    "report",
    "week",
    "forecast",
    "restock",
    "demand",
    "cash",
    "budget",
    "error",
    "invalid",
    "result",
    "value",
    "color",
    "lookup",
    "submit",
    "add",
    "query",
    "key",
    "word",
    "red",
    "green",
    "blue",
    "yellow",
    "black",
    "orange",
    "purple",
    "apple",
    "lamp",
    "box",
    "stone",
    "river",
    "cloud",
    "tiger",
    "table",
    "chair",
    "glass",
    "paper",
    "shoe",
]


def _corpus() -> list[str]:
    """Text that makes the merges useful: template markup, tool-call JSON, numbers and common words."""
    lines: list[str] = []
    for i, word in enumerate(_WORDS):
        other = _WORDS[(i * 7 + 3) % len(_WORDS)]
        call = {"name": word, "arguments": {"item": other, "quantity": i % 50, "note": f"{word} {other}"}}
        lines.append(f"<tool_call>{json.dumps(call)}</tool_call>")
        lines.append(f"<tool_response>{json.dumps({'ok': True, 'value': i, word: other})}</tool_response>")
        lines.append(f"<|im_start|>user\nPlease {word} the {other} and report {i}.<|im_end|>")
        lines.append(f"<|im_start|>assistant\nI will {word} {other} now.<|im_end|>")
    lines.extend(" ".join(_WORDS[i : i + 12]) for i in range(0, len(_WORDS), 12))
    lines.extend(f"{n} {n * 3} {n / 4:.2f} -{n}" for n in range(200))
    lines.append(
        '{"type": "function", "function": {"name": "x", "description": "y", "parameters": {"type": "object", '
        '"properties": {}, "required": [], "additionalProperties": false}}}'
    )
    return lines


def build_tokenizer(vocab_size: int = 1024, extra_corpus: tuple[str, ...] = ()):  # -> PreTrainedTokenizerFast
    """A byte-level BPE tokenizer with the chat special tokens and the tool-aware chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte encodable: no unknown tokens
        show_progress=False,
    )
    core.train_from_iterator(_corpus() + list(extra_corpus), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t not in (EOS_TOKEN, PAD_TOKEN)],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.padding_side = "right"
    return tokenizer


def build_tiny_model(
    path: str | os.PathLike[str],
    *,
    seed: int = 0,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    vocab_size: int = 1024,
    max_positions: int = 8192,
) -> Path:
    """Write a randomly initialised Qwen3 model and its tokenizer to `path`; returns the path.

    Deterministic in `seed`: the same arguments give the same weights and the same tokenizer.
    """
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, Qwen3Config

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(vocab_size)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        head_dim=hidden_size // num_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@lru_cache(maxsize=8)
def tiny_model_path(seed: int = 0) -> Path:
    """A tiny model built once per process (tests share it); treat the folder as read-only."""
    folder = Path(tempfile.mkdtemp(prefix=f"practicum-tiny-{seed}-"))
    return build_tiny_model(folder, seed=seed)
