from __future__ import annotations

import pytest

from environments.desktop.hybrid import solve
from environments.desktop.shell_reward import Act, shell_aware, shell_aware_of_record
from tests.environments.desktop.conftest import do, new_desktop

MOVE = {
    "composite": 1.0,
    "state_ok": True,
    "items": [{"item": "files /home/user/Downloads/a.pdf", "ok": True}, {"item": "files /home/user/Documents/Invoices/a.pdf", "ok": True}],
}
MV = Act("shell", False, ("file:/home/user/Downloads/a.pdf", "file:/home/user/Documents/Invoices/a.pdf"), True)
DRAG = Act("drag", False, MV.entities, True)


def test_reaching_the_goal_through_the_shell_where_it_is_efficient_earns_the_shell_term() -> None:
    shell = shell_aware(MOVE, [Act("shell", False, (), False), MV], ["move-files"])
    gui = shell_aware(MOVE, [Act("open_app", False, (), False), DRAG], ["move-files"])
    assert shell == {"shell_aware": 1.2, "efficient_shell_share": 1.0, "failed_shell": 0, "destructive_shell": 0}
    assert gui["shell_aware"] == 1.0 and gui["efficient_shell_share"] == 0.0
    assert (
        shell_aware(MOVE | {"state_ok": False, "composite": 0.4}, [MV], ["move-files"])["shell_aware"] == 0.4
    )  # only a correct state earns it


def test_a_setting_earns_no_shell_term_either_way_the_channels_tie() -> None:
    grade = {"composite": 1.0, "state_ok": True, "items": [{"item": "setting display.theme", "ok": True}]}
    act = Act("shell", False, ("setting:display.theme",), True)
    assert shell_aware(grade, [act], ["change-setting"])["shell_aware"] == 1.0


def test_failed_shell_commands_cost_a_little_each_up_to_a_cap() -> None:
    fail = Act("shell", True, (), False)
    assert shell_aware(MOVE, [fail, MV], ["move-files"])["shell_aware"] == pytest.approx(1.15)
    assert shell_aware(MOVE, [fail] * 9 + [MV], ["move-files"])["shell_aware"] == pytest.approx(0.95)
    assert shell_aware(MOVE, [Act("click", True, (), False), MV], ["move-files"])["failed_shell"] == 0  # GUI errors are not shell's


def test_a_command_that_touches_data_outside_the_goal_is_destructive() -> None:
    stray = Act("shell", False, ("file:/home/user/Documents/notes.txt",), False)
    other_setting = Act("shell", False, ("setting:privacy.location",), False)
    mail = Act("shell", False, ("mail",), False)
    out = shell_aware(MOVE, [MV, stray, other_setting, mail], ["move-files"])
    assert out["destructive_shell"] == 3 and out["shell_aware"] == pytest.approx(1.2 - 1.0)
    assert shell_aware(MOVE, [MV, Act("drag", False, stray.entities, False)], ["move-files"])["destructive_shell"] == 0


def test_the_environment_reports_the_component_and_the_record_gives_the_same_value() -> None:
    for kind, task in (("shell", "reply-mail"), ("gui", "reply-mail"), ("mixed", "change-setting")):
        record = solve(kind, task, 4, "high")
        assert record["header"]["score"]["components"]["shell_aware"] == shell_aware_of_record(record)["shell_aware"]
    assert solve("shell", "reply-mail", 4, "none")["header"]["score"]["components"]["shell_aware"] == 1.2


def test_an_overwrite_in_place_outside_the_goal_is_penalised_in_the_score() -> None:
    env = new_desktop("move-files", 1000)
    path = next(p for p in env.session.data.files if p.endswith(".txt"))
    word = env.session.data.files[path].split()[0]
    assert not do(env, "shell", command=f"sed -i 's/{word}/X/' {path}").is_error
    do(env, "shell", command="nosuchcommand")
    do(env, "submit")
    score = env.score()
    assert score.details["shell"]["destructive_shell"] == 1 and score.details["shell"]["failed_shell"] == 1
    assert score.components["shell_aware"] == pytest.approx(score.composite - 0.5 - 0.05)
