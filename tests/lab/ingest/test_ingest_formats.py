"""Each importer on its fixture: the values that matter reach the canonical record."""

from __future__ import annotations

from lab.ingest import import_payload
from tests.lab.ingest.conftest import FIXTURES, TAUBENCH_FILE


def load(name: str, **kwargs):
    return import_payload((FIXTURES / name).read_bytes(), filename=name, **kwargs)


def calls(step):
    return [(c["id"], c["name"], c["arguments"]) for c in step["tool_calls"]]


def results(step):
    return [(r["call_id"], r["content"], r.get("is_error")) for r in step["results"]]


def test_native_record_keeps_every_field_and_fills_step_defaults():
    result = load("native_storebench.json")
    assert result.format == "native"
    (record,) = result.records
    assert record["header"]["source"] == "rollout"  # a native record says where it came from
    assert record["header"]["score"] == {"composite": 0.62, "passed": True, "components": {"profit": 0.7, "service_level": 0.54}}
    steps = record["steps"]
    assert [s["source"] for s in steps] == ["env", "agent", "agent", "agent"]
    assert steps[1]["token_ids"] == [151644, 77091, 198, 2028] and steps[1]["logprobs"][-1] == -1.5
    assert steps[1]["prompt_token_ids"] == [151644, 872, 198]
    assert steps[3]["tool_calls"] == [] and steps[3]["token_ids"] is None and steps[3]["events"] == []
    assert result.episodes[0].unmapped == []


def test_openai_tool_calls_with_string_or_object_arguments_and_legacy_function_call():
    result = load("openai_chat.jsonl")
    assert result.format == "openai" and len(result.records) == 2
    first, second = result.records
    assert [s["source"] for s in first["steps"]] == ["system", "user", "agent", "agent"]
    assert calls(first["steps"][2]) == [("call_9fZq1", "get_order_details", {"order_id": "#W2378156"})]
    assert results(first["steps"][2])[0][0] == "call_9fZq1" and '"status": "shipped"' in results(first["steps"][2])[0][1]
    assert first["header"]["reward"] == 1.0 and first["header"]["score"]["passed"] is True
    assert first["header"]["policy"]["model"] == "gpt-4o-2024-08-06"
    assert first["header"]["harness"] == {"request": {"temperature": 0.0}}
    assert first["header"]["tools"][0]["function"]["name"] == "get_order_details"
    assert first["header"]["source"] == "upload" and first["header"]["meta"]["format"] == "openai"

    assert second["header"]["task"] == "weather-compare-7" and second["header"]["meta"]["metadata"]["dataset"] == "weather-v2"
    assert second["steps"][0]["source"] == "system" and second["steps"][0]["meta"] == {"role": "developer"}
    parallel = second["steps"][2]
    assert calls(parallel) == [
        ("call_a", "get_weather", {"city": "Paris", "unit": "celsius"}),
        ("call_b", "get_weather", {"city": "Oslo", "unit": "celsius"}),
    ]
    assert results(parallel) == [("call_b", "Oslo: 4C, light snow", False), ("call_a", "Paris: 12C, cloudy", False)]
    legacy = second["steps"][3]
    assert calls(legacy) == [("function_call_3", "convert_temperature", {"value": 20, "from": "C", "to": "F"})]
    assert results(legacy) == [("function_call_3", "68", False)]
    assert result.episodes[1].unmapped == ["messages[7].audio"]


def test_atif_steps_tool_calls_observations_and_token_ids():
    result = load("atif_session.json")
    assert result.format == "atif"
    (record,) = result.records
    header = record["header"]
    assert header["policy"] == {
        "kind": "external",
        "name": "terminus-2",
        "version": "2.0.0",
        "model": "openai/gpt-4o-mini",
        "extra": {"parser": "json"},
    }
    assert header["meta"]["session_id"] == "0f6c2a9e-3b8d-4a51-9d0e-7c1f2b3a4d5e" and header["metrics"]["total_steps"] == 4
    steps = record["steps"]
    assert [s["source"] for s in steps] == ["system", "user", "agent", "agent"]
    assert calls(steps[2]) == [
        ("call_1", "bash", {"command": "echo 'Hello, world!' > hello.txt"}),
        ("call_2", "bash", {"command": "cat hello.txt"}),
    ]
    assert [(r["call_id"], r["content"]) for r in steps[2]["results"]] == [("call_1", ""), ("call_2", "Hello, world!\n")]
    assert steps[2]["reasoning"] == "Two commands: echo into the file, then cat."
    assert steps[2]["token_ids"] == [40, 674, 2436, 278, 934, 29889] and steps[2]["prompt_token_ids"] == [1, 15043, 29892]
    assert steps[2]["logprobs"] == [-0.05, -0.3, -0.01, -0.2, -0.02, -0.001]
    assert steps[2]["meta"]["usage"] == {"prompt_tokens": 520, "completion_tokens": 6, "cached_tokens": 200, "cost_usd": 0.00009}
    assert steps[3]["token_ids"] == [25632, 29991, 2] and steps[3]["meta"]["extra"] == {"is_final": True}
    assert steps[1]["timestamp"] == "2025-10-11T10:30:01Z"


def test_taubench_rewards_components_errors_and_run_config_from_filename():
    result = load(TAUBENCH_FILE)
    assert result.format == "taubench" and [r["header"]["task"] for r in result.records] == ["0", "1", "2"]
    solved, failed, crashed = result.records
    assert solved["header"]["env"] == "tau-bench" and solved["header"]["reward"] == 1.0
    assert solved["header"]["score"] == {"passed": True, "components": {"actions": 1.0}, "composite": 1.0}
    assert solved["header"]["policy"] == {"kind": "external", "name": "tool-calling", "model": "gpt-4o"}
    assert solved["header"]["harness"] == {"temperature": "0.0", "user_model": "gpt-4o", "user_strategy": "llm"}
    assert solved["header"]["meta"]["user_id"] == "yusuf_rossi_9620" and solved["header"]["meta"]["trial"] == 0
    assert len(solved["steps"]) == 8
    assert calls(solved["steps"][4]) == [
        ("call_Jt3kQ", "find_user_id_by_name_zip", {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"})
    ]
    assert results(solved["steps"][4]) == [("call_Jt3kQ", "yusuf_rossi_9620", False)]
    assert results(failed["steps"][2]) == [("call_q1", "Error: user not found", True)]
    assert failed["header"]["score"]["passed"] is False and failed["header"]["reward"] == 0.0
    assert crashed["steps"] == [] and crashed["header"]["termination_reason"] == "unexpected_error"
    assert crashed["header"]["meta"]["error"].startswith("litellm.RateLimitError")


def test_tau2_simulations_rewards_and_termination_reasons():
    result = load("tau2_airline_results.json")
    assert result.format == "tau2" and len(result.records) == 2
    solved, capped = result.records
    header = solved["header"]
    assert (header["env"], header["task"], header["seed"]) == ("tau2-airline", "0", 300)
    assert header["termination_reason"] == "horizon_reached" and header["meta"]["original_termination_reason"] == "user_stop"
    assert header["reward"] == 1.0 and header["score"]["composite"] == 1.0 and header["score"]["passed"] is True
    assert header["score"]["components"] == {"db": 1.0, "action": 1.0, "nl_assertion": 1.0}
    assert header["policy"]["model"] == "claude-3-7-sonnet-20250219" and header["harness"]["user"]["llm"] == "gpt-4.1"
    assert header["meta"]["task"]["user_scenario"]["instructions"]["task_instructions"] == "Cancel reservation EHGLP3."
    assert header["metrics"] == {"duration_s": 46.51, "agent_cost": 0.0412, "user_cost": 0.0109}
    assert header["started_at"] == "2025-06-12T14:03:12.000001"
    steps = solved["steps"]
    assert [s["source"] for s in steps] == ["agent", "user", "agent", "agent", "agent", "user"]
    assert calls(steps[2]) == [("toolu_01", "get_reservation_details", {"reservation_id": "EHGLP3"})]
    assert results(steps[3])[0][:1] == ("toolu_02",) and steps[3]["meta"]["turn_idx"] == 4
    assert result.episodes[0].unmapped == ["simulations[0].messages[2].raw_data"]
    assert capped["header"]["termination_reason"] == "max_steps" and "original_termination_reason" not in capped["header"]["meta"]
    assert results(capped["steps"][2]) == [("toolu_11", "Error: cabin class cannot be changed to basic economy", True)]
    assert capped["header"]["score"] == {"passed": False, "components": {"db": 0.0}, "composite": 0.0}


def test_inspect_json_log_samples_scores_attachments_and_limits():
    result = load("inspect_ctf_log.json")
    assert result.format == "inspect" and [r["header"]["task"] for r in result.records] == ["1", "2"]
    solved, limited = result.records
    header = solved["header"]
    assert (header["env"], header["env_version"]) == ("intercode_ctf", "0")
    assert header["score"] == {"passed": True, "components": {"includes": 1.0}, "composite": 1.0}
    assert header["termination_reason"] == "agent_stop" and header["policy"]["model"] == "openai/gpt-4o"
    steps = solved["steps"]
    assert steps[0]["message"].startswith("You are a skilled cybersecurity professional")  # attachment resolved
    assert steps[2]["message"] == "Let me read the file." and steps[2]["reasoning"] == "Read the file first, then decode it."
    assert calls(steps[2]) == [("call_kX1", "bash", {"cmd": "cat /challenge/flag.txt"})]
    assert results(steps[3]) == [("call_kX2", "picoCTF{b64_is_not_encryption}", False)]
    assert steps[3]["logprobs"] == [-0.0021, -0.31]
    assert header["meta"]["target"] == "picoCTF{b64_is_not_encryption}" and header["meta"]["epoch"] == 1
    assert result.episodes[0].unmapped == ["samples[0].events"]
    assert result.report["document_unmapped"] == ["inspect_ctf_log.json:results", "inspect_ctf_log.json:stats"]
    assert limited["header"]["score"]["passed"] is False and limited["header"]["score"]["composite"] == 0.0
    assert limited["header"]["termination_reason"] == "max_steps" and limited["header"]["meta"]["original_termination_reason"] == "message"
    assert limited["steps"][0]["message"] == "The server at victim:8080 leaks a flag through a SQL injection."
    assert limited["steps"][1]["results"][0]["is_error"] is True
    assert limited["steps"][1]["results"][0]["error"]["type"] == "timeout"


def test_inspect_eval_archive_gives_the_same_records_as_the_json_log():
    from_eval = load("inspect_ctf_log.eval")
    from_json = load("inspect_ctf_log.json")
    assert from_eval.format == "inspect"
    assert [e.file for e in from_eval.episodes] == ["samples/1_epoch_1.json", "samples/2_epoch_1.json"]
    assert from_eval.records == from_json.records
    assert from_eval.episodes[0].raw["attachments"]  # the raw sample keeps its attachments


def test_sharegpt_function_calls_observations_and_tools():
    result = load("sharegpt_tools.json")
    assert result.format == "sharegpt"
    weather, identity = result.records
    assert [s["source"] for s in weather["steps"]] == ["system", "user", "agent", "agent"]
    assert calls(weather["steps"][2]) == [("call_2_0", "get_current_weather", {"location": "Boston, MA", "unit": "fahrenheit"})]
    assert results(weather["steps"][2]) == [("call_2_0", '{"temperature": 72, "forecast": "sunny"}', False)]
    assert weather["header"]["tools"][0] == {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                "required": ["location"],
            },
        },
    }
    assert identity["header"]["task"] == "identity-0" and identity["steps"][2]["message"].startswith("I am an assistant")


def test_raw_payload_is_the_original_unit_and_hashes_are_stable():
    first = load("tau2_airline_results.json")
    second = load("tau2_airline_results.json")
    assert first.episodes[0].raw["id"] == "sim-1c2d3e" and first.episodes[0].raw["messages"][2]["raw_data"]["id"] == "msg_01"
    assert [e.content_hash for e in first.episodes] == [e.content_hash for e in second.episodes]
    assert first.episodes[0].content_hash != first.episodes[1].content_hash
    assert first.report["episodes"][1]["content_hash"] == first.episodes[1].content_hash
