"""Secrets are redacted at ingest, in records and raw payloads, and counted in the report."""

from __future__ import annotations

import json

from lab.ingest import Redactor, import_payload
from tests.lab.ingest.conftest import FIXTURES

SECRETS = {
    "openai_key": "sk-proj-Z9y8X7w6V5u4T3s2R1q0PoNmLkJi",
    "anthropic_key": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
    "github_token": "ghp_" + "a1B2c3D4e5" * 4,
    "slack_token": "xoxb-2048-4096-AbCdEfGhIjKl",
}


def test_default_patterns_each_kind():
    redactor = Redactor()
    for kind, secret in SECRETS.items():
        text, count = redactor.redact_text(f"key: {secret} end")
        assert (text, count) == (f"key: [REDACTED:{kind}] end", 1), kind
    assert redactor.redact_text("curl -H 'Authorization: Bearer abc.def-ghi_jkl012'") == (
        "curl -H 'Authorization: Bearer [REDACTED:bearer_token]'",
        1,
    )
    assert redactor.redact_text("export API_KEY=s3cr3t-v4lue-123") == ("export API_KEY=[REDACTED:assignment]", 1)
    assert redactor.redact_text('{"token": "tok_abcdefgh12345", "page": 2}') == ('{"token": "[REDACTED:assignment]", "page": 2}', 1)
    pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----"
    assert redactor.redact_text(f"key:\n{pem}\n") == ("key:\n[REDACTED:private_key]\n", 1)


def test_ordinary_text_is_left_alone():
    redactor = Redactor()
    for text in ("max_tokens: 12345678", "the task-ask-skill", "Bearer of bad news", "password reset flow", "sk-short"):
        assert redactor.redact_text(text) == (text, 0)


def test_secret_valued_keys_are_redacted_whole():
    value, count = Redactor().redact({"arguments": {"api_key": "plainvalue123", "password": "short", "city": "Paris"}})
    assert value == {"arguments": {"api_key": "[REDACTED:assignment]", "password": "short", "city": "Paris"}} and count == 1


def test_upload_redacts_record_and_raw_and_counts_per_episode():
    chat = {
        "messages": [
            {"role": "user", "content": f"my key is {SECRETS['openai_key']} and {SECRETS['aws_access_key']}"},
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "login", "arguments": json.dumps({"token": "tok_abcdefgh12345"})}}
                ],
            },
        ]
    }
    clean = {"messages": [{"role": "user", "content": "nothing here"}]}
    result = import_payload(f"{json.dumps(chat)}\n{json.dumps(clean)}".encode())
    first = result.episodes[0]
    assert first.record["steps"][0]["message"] == "my key is [REDACTED:openai_key] and [REDACTED:aws_access_key]"
    assert first.record["steps"][1]["tool_calls"][0]["arguments"] == {"token": "[REDACTED:assignment]"}
    assert SECRETS["openai_key"] not in json.dumps(first.raw) and "tok_abcdefgh12345" not in json.dumps(first.raw)
    assert first.redactions == 3 and result.episodes[1].redactions == 0
    assert result.report["redactions"] == 3 and [e["redactions"] for e in result.report["episodes"]] == [3, 0]


def test_fixture_secrets_are_counted():
    tau2 = import_payload((FIXTURES / "tau2_airline_results.json").read_bytes())
    assert [e.redactions for e in tau2.episodes] == [0, 1]
    assert "api_key=[REDACTED:openai_key]" in tau2.records[1]["steps"][1]["message"]
    inspect = import_payload((FIXTURES / "inspect_ctf_log.json").read_bytes())
    assert inspect.report["redactions"] == 1
    assert "Bearer [REDACTED:bearer_token]" in inspect.records[1]["steps"][1]["tool_calls"][0]["arguments"]["cmd"]


def test_custom_patterns_replace_the_defaults():
    payload = json.dumps({"messages": [{"role": "user", "content": f"id EMP-4411 and {SECRETS['openai_key']}"}]}).encode()
    result = import_payload(payload, redaction_patterns={"employee_id": r"EMP-\d{4}"})
    assert result.records[0]["steps"][0]["message"] == f"id [REDACTED:employee_id] and {SECRETS['openai_key']}"
    assert result.report["redactions"] == 1
    untouched = import_payload(payload, redaction_patterns=Redactor([], redact_secret_keys=False))
    assert untouched.report["redactions"] == 0


def test_it_redacts_this_projects_own_api_keys():
    raw = "prk_" + "Qx7_Lm2-Zp9vR4tW8nB3cK6dF0gS3eUaB9xQ7m"
    assert Redactor().redact_text(f"curl -H 'Authorization: Token {raw}'") == ("curl -H 'Authorization: Token [REDACTED:practicum_key]'", 1)
    assert Redactor().redact({"note": f"key={raw}"}) == ({"note": "key=[REDACTED:practicum_key]"}, 1)


def test_it_redacts_the_password_inside_a_url_and_keeps_the_rest():
    redactor = Redactor()
    assert redactor.redact_text("DATABASE_URL=postgres://app:s3cr3t@db:5432/lab") == (
        "DATABASE_URL=postgres://app:[REDACTED:url_credentials]@db:5432/lab",
        1,
    )
    assert redactor.redact_text("redis://:hunter2@cache:6379/0") == ("redis://:[REDACTED:url_credentials]@cache:6379/0", 1)
    assert redactor.redact_text("git clone https://bob:p@ss@example.com/x.git") == (
        "git clone https://bob:[REDACTED:url_credentials]@example.com/x.git",
        1,
    )
    for text in ("postgres://postgres@127.0.0.1:5432/db", "https://example.com:8443/path?a=b", "ssh://git@github.com/x"):
        assert redactor.redact_text(text) == (text, 0)


def test_it_redacts_names_ending_in_password_token_or_secret():
    redactor = Redactor()
    assert redactor.redact_text("export DB_PASSWORD=hunter2hunter2 GITHUB_TOKEN='abcdefgh123'") == (
        "export DB_PASSWORD=[REDACTED:assignment] GITHUB_TOKEN='[REDACTED:assignment]'",
        2,
    )
    value, count = redactor.redact({"db_password": "hunter2hunter2", "session-token": "abcdefgh123", "app_secret": "0123456789"})
    assert value == {
        "db_password": "[REDACTED:assignment]",
        "session-token": "[REDACTED:assignment]",
        "app_secret": "[REDACTED:assignment]",
    }
    assert count == 3


def test_tokenizer_special_tokens_and_counts_are_not_secrets():
    redactor = Redactor()
    value = {"eos_token": "<|endoftext|>", "pad_token": "<|padding|>", "max_tokens": "12345678", "prompt_token_ids": [1, 2]}
    assert redactor.redact(value) == (value, 0)
    assert redactor.redact_text("eos_token: <|endoftext|>") == ("eos_token: <|endoftext|>", 0)


def test_an_uploaded_step_with_sampled_ids_that_lost_a_secret_loses_its_ids_and_is_marked():
    from environments.trajectory import make_step, new_record

    ids = {"token_ids": [5, 6], "logprobs": [-0.1, -0.2]}
    steps = [
        make_step(index=0, source="agent", message="clean", prompt_token_ids=[1], **ids),
        make_step(index=1, source="agent", message=f"key {SECRETS['github_token']}", prompt_token_ids=[1, 5, 6], **ids),
        make_step(index=2, source="agent", message="clean", prompt_token_ids=[1, 5, 6, 5, 6], **ids),
    ]
    record = new_record(header={"env": "toyenv", "task": "t", "source": "rollout"}, steps=steps)
    result = import_payload(json.dumps(record).encode())
    clean, redacted, later = result.records[0]["steps"]
    assert (clean["token_ids"], clean["prompt_token_ids"]) == ([5, 6], [1])
    assert redacted["message"] == "key [REDACTED:github_token]" and redacted["meta"] == {"training_unusable": "redacted"}
    assert redacted.get("token_ids") is None and redacted.get("logprobs") is None and redacted.get("prompt_token_ids") is None
    assert later["token_ids"] == [5, 6] and later.get("prompt_token_ids") is None  # its prompt spelt the secret out
    untouched = import_payload(json.dumps({**record, "steps": [steps[0], {**steps[2], "index": 1}]}).encode()).records[0]["steps"]
    assert [s["prompt_token_ids"] for s in untouched] == [[1], [1, 5, 6, 5, 6]]


# A corpus of what users leak most, as it appears in real logs and configs, and of look-alikes that are no secret.
LEAKS = [
    ("HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"),
    ("login with hf_QwErTyUiOpAsDfGhJkLzXcVbNm12345678 then push", "hf_QwErTyUiOpAsDfGhJkLzXcVbNm12345678"),
    ("maps?key=AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY&q=x", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"),
    ("stripe.api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("restricted rk_live_51H8aBcDeFgHiJkLmNoPqRsT in env", "rk_live_51H8aBcDeFgHiJkLmNoPqRsT"),
    (
        "cookie: session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    ("-H 'Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l'", "YWxhZGRpbjpvcGVuc2VzYW1l"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ('{"dbPassword": "Tr0ub4dor&3xyz"}', "Tr0ub4dor&3xyz"),
    ("dbPassword: Tr0ub4dor-3xyz", "Tr0ub4dor-3xyz"),
    ("passwd: correct-horse-battery", "correct-horse-battery"),
    ("DATABASE_URL=postgres://admin:s3cr3tP4ssw0rd@db.internal:5432/app", "s3cr3tP4ssw0rd"),
    ("[REDACTED:assignment] and then sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
]
LOOK_ALIKES = [
    "the hf_hub_download function and hf_transfer",
    "AIza is how Google keys start; see the docs",
    "sk_test_ keys are for tests; use sk_live_ in production",
    "eyJ is base64 for '{\"'",
    "Basic understanding of the Authorization header helps",
    "the aws_secret_access_key setting names your key",
    '{"pwd": "/home/alice/project", "eos_token": "</s>", "passwordHint": "pet"}',
    "passwordless login; reset your password: open the settings",
    "mailto:alice@example.com and user@host",
]


def test_a_corpus_of_realistic_leaks_is_redacted():
    redactor = Redactor()
    for text, secret in LEAKS:
        redacted, count = redactor.redact_text(text)
        assert secret not in redacted and count >= 1, text
        walked, _ = redactor.redact({"note": text})
        assert secret not in json.dumps(walked), text  # the walk too, whatever the string starts with
        assert redactor.may_hold_secrets(json.dumps({"note": text})), text  # the pre-scan never skips one


def test_look_alikes_are_left_alone():
    redactor = Redactor()
    for text in LOOK_ALIKES:
        assert redactor.redact_text(text) == (text, 0), text
        assert redactor.redact({"note": text, **json.loads(text)} if text.startswith("{") else {"note": text})[1] == 0, text
